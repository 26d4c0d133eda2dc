"""URL routes: the health check, the annotator pages, allauth, the admin, the JSON API."""

from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from core.health import HealthView

HEALTH_CHECKS = (
    "health_check.checks.Database",
    "core.health.SharedCache",
    "core.health.JobBroker",
    "models_registry.health.TargetModelFiles",
)

# A database outage answers 503 with Retry-After, anything else 500 (JSON under /api/).
handler500 = "core.server_errors.server_error"

urlpatterns = [
    path("health/", HealthView.as_view(checks=HEALTH_CHECKS), name="health"),
    # The loop's records moved from the leaderboards app to cycle (docs/architecture.md): their old admin
    # addresses, bookmarked by owners, lead to the new ones.
    re_path(
        r"^admin/leaderboards/(?P<model>trainingjob|release|artefactprobe)/(?P<rest>.*)$",
        RedirectView.as_view(url="/admin/cycle/%(model)s/%(rest)s", query_string=True),
    ),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/", include("dynabench.api_urls")),
    path("v1/", include("models_registry.openai_compat.urls")),
    path("", include("accounts.urls")),
    path("", include("tasks.urls")),
    path("", include("annotation.urls")),
    path("", include("validation.urls")),
    path("", include("crowd.urls")),
    path("", include("generative_bench.urls")),
    path("", include("leaderboards.urls")),
    path("", include("cycle.urls")),
]
