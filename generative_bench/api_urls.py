"""``/api/`` routes of generative benchmarking (each sub-package its own)."""

from django.urls import include, path

urlpatterns = [
    path("", include("generative_bench.replay.api_urls")),
    path("", include("generative_bench.judges.api_urls")),
    path("", include("generative_bench.arena.api_urls")),
    path("", include("generative_bench.transfer.api_urls")),
    path("", include("generative_bench.pairwise.api_urls")),
]
