"""``/api/``: every app's API routes, the OpenAPI schema and the interactive docs."""

from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from core.middleware import ApiJsonResponse


@csrf_exempt
def not_found(request, *args, **kwargs):
    """An ``/api/`` URL no route matches (e.g. ``/api/models/-1/``): a JSON 404, not the site's HTML page,
    for every method: CSRF-exempt, since it changes nothing and a POST would otherwise meet Django's
    HTML CSRF page first."""
    return ApiJsonResponse({"detail": "Not found."}, status=404)


urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("tasks.api_urls")),
    path("", include("annotation.api_urls")),
    path("", include("validation.api_urls")),
    path("", include("crowd.api_urls")),
    path("", include("generative_bench.api_urls")),
    path("", include("models_registry.api_urls")),
    path("", include("leaderboards.api_urls")),
    re_path(r"^", not_found),  # last: only what no API route matched
]
