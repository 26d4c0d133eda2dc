"""A round's quality page for the task's owners: the round's alpha, per validator (alpha, agreement
with the outcome, gold accuracy) and per annotator (alpha, share validated correct)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from core.text_rules import ascii_id
from tasks import selectors as task_selectors
from tasks.models import Round

from .agreement import round_quality


@login_required
def round_quality_page(request, slug: str, number: str):
    """``/tasks/<slug>/rounds/<n>/quality/``: 404 for anyone but the task's owners (and superusers)."""
    task = task_selectors.task_or_404(slug)
    if not task.is_owner(request.user):
        raise Http404("No such page.")
    round_ = Round.objects.select_related("task").filter(task=task, number=ascii_id(number) or 0).first()
    if round_ is None:
        raise Http404("No such round.")
    return render(
        request,
        "validation/quality.html",
        {
            "task": task,
            "round": round_,
            "quality": round_quality(round_),
            "rounds": task_selectors.rounds_of(task),
        },
    )
