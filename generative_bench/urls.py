"""Pages of generative benchmarking: replay, judges and the arena (each sub-package its own routes)."""

from django.urls import include, path

# One namespace for the sub-packages' pages: ``generative_bench:judges``, ``generative_bench:arena_ranking``.
app_name = "generative_bench"

urlpatterns = [
    path("", include("generative_bench.replay.urls")),
    path("", include("generative_bench.judges.urls")),
    path("", include("generative_bench.arena.urls")),
    path("", include("generative_bench.transfer.urls")),
]
