"""The side-by-side ratings on a red-teaming task's page (``tasks.page_sections``): per model, the mean
1-100 rating, the share judged a failure and the share chosen, each with its interval across writers
(``annotation.red_team.ratings.model_ratings``), as a table and a forest plot; the models named as the
arena's ranking names them (``arena.selectors.shown_names``: an unpublished or anonymous model is not
named to those who may not see it)."""

from __future__ import annotations

from annotation.red_team.ratings import model_ratings
from models_registry.models import RegisteredModel
from tasks.charts import interval_chart
from tasks.page_sections import PageSection

from .selectors import shown_names


def task_page_section(request, task) -> PageSection | None:
    """The task page's "Models side by side" table and chart (``tasks.page_sections``); None for a task
    without ratings."""
    rows = model_ratings(task)
    if not rows:
        return None
    names = shown_names(request.user, task, RegisteredModel.objects.filter(pk__in=[r.model_id for r in rows]))
    chart = interval_chart(
        [(names[r.model_id], r.mean_score, r.score_interval) for r in rows],
        low=1,
        high=100,
        ticks=(1, 25, 50, 75, 100),
        title="Mean rating of each model's answers (1-100) with 95% intervals across people",
    )
    shown = [{"name": names[r.model_id], "figures": r} for r in rows]
    return PageSection("generative_bench/arena/_side_by_side.html", {"rows": shown, "chart": chart.svg})
