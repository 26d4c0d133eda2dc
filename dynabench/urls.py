"""URL routes: the health check, the annotator pages, allauth, the admin, the JSON API."""

from urllib.parse import quote

from django.contrib import admin
from django.http import HttpResponseRedirect
from django.urls import include, path, re_path

from core.health import HealthView

HEALTH_CHECKS = (
    "health_check.checks.Database",
    "core.health.SharedCache",
    "core.health.JobBroker",
    "models_registry.health.TargetModelFiles",
)

# A database outage answers 503 with Retry-After, anything else 500 (JSON under /api/).
handler500 = "core.server_errors.server_error"


def moved_admin(request, model: str, rest: str):
    """An old admin address of a model that moved from leaderboards to cycle: the same page there, the
    rest of the path quoted again as it came (Django hands it decoded) and the query string kept."""
    target = f"/admin/cycle/{model}/{quote(rest)}"
    query = request.META.get("QUERY_STRING", "")
    return HttpResponseRedirect(f"{target}?{query}" if query else target)


urlpatterns = [
    path("health/", HealthView.as_view(checks=HEALTH_CHECKS), name="health"),
    # The loop's records moved from the leaderboards app to cycle (docs/architecture.md): their old admin
    # addresses, bookmarked by owners, lead to the new ones.
    re_path(r"^admin/leaderboards/(?P<model>trainingjob|release|artefactprobe)/(?P<rest>.*)$", moved_admin),
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
