"""URL routes: the annotator pages, allauth, the admin, the JSON API."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/", include("dynabench.api_urls")),
    path("", include("accounts.urls")),
    path("", include("tasks.urls")),
    path("", include("annotation.urls")),
    path("", include("validation.urls")),
    path("", include("leaderboards.urls")),
]
