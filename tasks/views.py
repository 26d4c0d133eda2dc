"""The task list and a task's page."""

from django.shortcuts import render

from . import selectors
from .charts import Series, rate_chart
from .round_stats import round_counts_for_task


def task_list(request):
    """The task list: every active task with its current round."""
    return render(request, "tasks/task_list.html", {"tasks": selectors.active_tasks()})


def task_detail(request, slug: str):
    """A task's page: instructions, content warning, per-round statistics, the MER/vMER plot, a "write" button."""
    task = selectors.task_or_404(slug)
    counts = round_counts_for_task(task)
    return render(
        request,
        "tasks/task_detail.html",
        {
            "task": task,
            "cfg": task.cfg,
            "round_counts": counts,
            "mer_chart": mer_chart(counts),
            "collecting": task.open_round is not None,
        },
    )


def mer_chart(counts):
    """The MER and vMER per round as an inline SVG chart (``tasks.charts.Chart``).

    A round whose MER is None (no collected example with a model verdict: nothing collected here, an
    imported round, a round without a target model) has no point: no live verdict is not a rate of 0.
    """
    return rate_chart(
        [str(c.round.number) for c in counts],
        [Series("MER", [c.mer for c in counts]), Series("vMER", [c.vmer for c in counts])],
        title="Model error rate (MER) and validated MER (vMER) per round",
        x_title="Round",
    )
