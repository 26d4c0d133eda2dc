"""The transfer matrix's page."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render

from generative_bench.kinds import benchmarked
from tasks.selectors import task_or_404

from .selectors import transfer_matrix


def transfer_page(request, slug: str):
    """``/tasks/<slug>/transfer/``: the red-teaming task's transfer matrix as the viewer may see it (404
    for another task)."""
    task = task_or_404(slug)
    if not benchmarked(task.cfg):
        raise Http404("No such page.")
    return render(
        request,
        "generative_bench/transfer/transfer.html",
        {"task": task, "matrix": transfer_matrix(task, request.user)},
    )
