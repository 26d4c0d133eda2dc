"""The judges page of a red-teaming task: per judge and round, agreement with people and the judge's
attack success rate beside people's (docs/benchmarking.md, "Judges")."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render

from generative_bench.kinds import benchmarked
from tasks.selectors import task_or_404

from .presenting import judges_figures


def judges_page(request, slug: str):
    """``/tasks/<slug>/judges/``: visible to whoever may see the task's leaderboard (an active task; 404
    otherwise, and for a task that is not red-teaming)."""
    task = task_or_404(slug)
    if not benchmarked(task.cfg):
        raise Http404("No such page.")
    return render(
        request,
        "generative_bench/judges/judges.html",
        {
            "task": task,
            "figures": judges_figures(task, request.user),
            "is_owner": task.is_owner(request.user),
        },
    )
