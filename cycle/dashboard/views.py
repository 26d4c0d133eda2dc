"""The task owner's dashboard page (reads in ``cycle.dashboard.figures``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render

from tasks.models import Task

from .figures import task_dashboard


@login_required
def owner_dashboard(request, slug: str):
    """``/tasks/<slug>/dashboard/``: rounds, training and evaluation jobs of a task, for its owners.

    A task being set up (inactive) has one too. Anonymous visitors are sent to log in; a signed-in user who
    is neither an owner of the task nor a superuser gets 404, as for an unknown slug (like the review page).
    """
    task = get_object_or_404(Task.objects.select_related("current_round"), slug=slug)
    if not task.is_owner(request.user):
        raise Http404("No such page.")  # as the review page: its existence leaks nothing
    return render(request, "cycle/dashboard.html", {"task": task, "dashboard": task_dashboard(task)})
