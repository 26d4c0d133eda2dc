"""Onboarding pages of a task (docs/crowd.md, "Qualification"): the tutorial (worked examples) and the
qualification quiz. Both come back to a safe ``next`` (a path on this site, else the create page)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from . import qualification, selectors
from .forms import QuizForm
from .models import Task


def safe_next(request, task: Task) -> str:
    """Where to go after onboarding: ``next`` (POST, then GET) if it is a URL of this site
    (``url_has_allowed_host_and_scheme``), else the task's create page. An external ``next`` is ignored."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("annotation:create", args=[task.slug])


def _standing(task: Task, user):
    return task.workers.filter(user=user).first()


@login_required
def tutorial(request, slug: str):
    """The task's worked examples; POST ("Start writing") records that the worker saw them, then goes to
    ``next``."""
    task = selectors.task_or_404(slug)
    if request.method == "POST":
        qualification.mark_tutorial_seen(task=task, user=request.user)
        return redirect(safe_next(request, task))
    worker = _standing(task, request.user)
    return render(
        request,
        "tasks/tutorial.html",
        {
            "task": task,
            "items": task.tutorial_items.all(),
            "seen_at": worker.tutorial_seen_at if worker else None,
            "next": safe_next(request, task),
        },
    )


@login_required
def quiz(request, slug: str):
    """The task's qualification quiz: GET shows the questions (never the answers); POST scores an attempt,
    stores it and shows the score, pass or fail and, when the task config's ``quiz.reveal_answers``
    allows it (``qualification.reveals_answers``; by default not while attempts remain), each question's
    verdict, right answer and explanation."""
    task = selectors.task_or_404(slug)
    the_quiz = qualification.active_quiz(task)
    next_url = safe_next(request, task)
    context = {"task": task, "quiz": the_quiz, "next": next_url, "result": None, "form": None}
    if the_quiz is None:
        return render(request, "tasks/quiz.html", context)
    worker = _standing(task, request.user)
    context["passed_at"] = worker.quiz_passed_at if worker else None
    context["attempts_left"] = qualification.attempts_left(the_quiz, request.user)
    if request.method == "POST" and context["passed_at"] is None:
        form = QuizForm(the_quiz, request.POST)
        if form.is_valid():
            try:
                result = qualification.submit_quiz(task=task, user=request.user, answers=form.answers())
            except qualification.QuizError as exc:
                messages.error(request, str(exc))
            else:
                context["result"] = result
                context["reveal_mode"] = task.cfg.quiz_reveal_answers
                context["attempts_left"] = result.attempts_left
                context["passed_at"] = request.user.task_standings.get(task=task).quiz_passed_at
                context["pass_percent"] = round(the_quiz.pass_mark * 100)
                return render(request, "tasks/quiz.html", context)
    else:
        form = QuizForm(the_quiz)
    context["form"] = form
    context["pass_percent"] = round(the_quiz.pass_mark * 100)
    return render(request, "tasks/quiz.html", context)
