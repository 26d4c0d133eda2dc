from django.shortcuts import render

from . import selectors


def task_list(request):
    """The task list: every active task with its current round."""
    return render(request, "tasks/task_list.html", {"tasks": selectors.active_tasks()})
