"""Pages of generative benchmarking: replay, judges and the arena (each sub-package its own routes)."""

from django.urls import include, path

urlpatterns = [
    path("", include("generative_bench.replay.urls")),
    path("", include("generative_bench.judges.urls")),
    path("", include("generative_bench.arena.urls")),
]
