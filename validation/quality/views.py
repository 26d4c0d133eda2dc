"""A round's quality page for the task's owners: the round's alpha, per validator (alpha, agreement
with the outcome, gold accuracy) and per annotator (alpha, share validated correct); each person links
to their standing on the task, where the owner blocks, holds or allows them (``round_person``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from core.text_rules import ascii_id
from tasks import qualification
from tasks import selectors as task_selectors
from tasks.models import Round, Task

from ..agreement import round_quality
from .selectors import person_of_pseudonym


def _owned_round_or_404(request, slug: str, number: str) -> tuple[Task, Round]:
    """The task and its round ``number``, for the task's owners and superusers; 404 for anyone else, an
    unknown task or round (the page does not say it exists)."""
    task = task_selectors.task_or_404(slug)
    if not task.is_owner(request.user):
        raise Http404("No such page.")
    round_ = Round.objects.select_related("task").filter(task=task, number=ascii_id(number) or 0).first()
    if round_ is None:
        raise Http404("No such round.")
    return task, round_


@login_required
def round_quality_page(request, slug: str, number: str):
    """``/tasks/<slug>/rounds/<n>/quality/``: 404 for anyone but the task's owners (and superusers).
    Each pseudonym links to ``round_person``."""
    task, round_ = _owned_round_or_404(request, slug, number)
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


@require_safe
@login_required
def round_person(request, slug: str, number: str, person: str):
    """``/tasks/<slug>/rounds/<n>/quality/people/<pseudonym>/``: redirect (302) to the admin change page
    of that person's standing on the task (``tasks.TaskWorker``: block or allow list, hold for review),
    making the row when they have none (``qualification.standing_of``: a new row lists and holds nobody,
    exactly as no row, so following the link twice or by accident changes nothing).

    404 for anyone but the task's owners and superusers, an unknown round, and a pseudonym that is not
    one of the people the round's quality page lists (``quality.selectors.person_of_pseudonym``).
    """
    task, round_ = _owned_round_or_404(request, slug, number)
    user = person_of_pseudonym(round_, person)
    if user is None:
        raise Http404("Nobody with this pseudonym wrote or validated in this round.")
    worker = qualification.standing_of(task, user)
    return redirect(reverse("admin:tasks_taskworker_change", args=[worker.pk]))
