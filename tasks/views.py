"""The task list and a task's page."""

from django.http import Http404
from django.shortcuts import render

# The task page shows each round's example counts. Reads of examples belong to the annotation app, so
# this page (presentation, not a model or service) reads them through annotation's selectors.
from annotation.selectors import round_counts_for_task

from . import selectors
from .models import Task


def task_list(request):
    """The task list: every active task with its current round."""
    return render(request, "tasks/task_list.html", {"tasks": selectors.active_tasks()})


def task_detail(request, slug: str):
    """A task's page: instructions, content warning, per-round counts and MER, a "write" button."""
    try:
        task = selectors.task_by_slug(slug)
    except Task.DoesNotExist:
        raise Http404("No such task.") from None
    current = task.current_round
    return render(
        request,
        "tasks/task_detail.html",
        {
            "task": task,
            "cfg": task.cfg,
            "round_counts": round_counts_for_task(task),
            "collecting": current is not None and not current.is_closed,
        },
    )
