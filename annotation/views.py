"""The annotator's pages: write an example, see the outcome, explain, retract or flag it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tasks import selectors as task_selectors
from tasks.models import Task

from . import selectors, services
from .forms import ExampleForm, ExplanationForm, FlagForm


def _task_or_404(slug: str) -> Task:
    try:
        return task_selectors.task_by_slug(slug)
    except Task.DoesNotExist:
        raise Http404("No such task.") from None


def _collecting(task: Task) -> bool:
    return task.current_round is not None and not task.current_round.is_closed


@login_required
def create(request, slug: str):
    """Write an example: the server runs the target model(s), then redirects to the outcome page.

    A task with context fields serves a context (``tasks.selectors.next_context``, least used first,
    optional ``?tag=``) and carries its id in a hidden ``context`` field; the service checks that it
    belongs to the current round.
    """
    task = _task_or_404(slug)
    cfg = task.cfg
    needs_context = bool(cfg.context_fields) and _collecting(task)
    context = None
    if request.method == "POST" and _collecting(task):
        form = ExampleForm(cfg, request.POST)
        if needs_context:
            context = task_selectors.context_of_round(task.current_round, request.POST.get("context"))
        if form.is_valid() and needs_context and context is None:
            form.add_error(None, "That context is no longer available; here is another one.")
        elif form.is_valid():
            try:
                example, _created = services.create_example(
                    task=task,
                    annotator=request.user,
                    inputs=form.inputs,
                    target=form.target,
                    context=context,
                    client_token=form.cleaned_data["client_token"],
                    time_taken_ms=form.time_taken_ms,
                )
            except services.ExampleError as exc:
                form.add_service_errors(exc)
            else:
                return redirect("annotation:outcome", pk=example.pk)
    else:
        form = ExampleForm(cfg)
    if needs_context and context is None:
        context = task_selectors.next_context(round_=task.current_round, tag=request.GET.get("tag") or None)
    return render(
        request,
        "annotation/create.html",
        {
            "task": task,
            "form": form,
            "collecting": _collecting(task),
            "blocked": request.user.is_blocked,
            "needs_context": needs_context,
            "served_context": context,
            "context_fields": [
                (spec.get("label", spec["name"]), context.data.get(spec["name"], ""))
                for spec in cfg.context_fields
            ]
            if context
            else [],
        },
    )


def _visible_example(request, pk: int):
    return get_object_or_404(selectors.examples_visible_to(request.user), pk=pk)


@login_required
def outcome(request, pk: int):
    """What the model said about an example. Visible to its author and the task's owners (404 otherwise)."""
    example = _visible_example(request, pk)
    task = example.round.task
    is_author = example.annotator_id == request.user.pk
    return render(
        request,
        "annotation/outcome.html",
        {
            "example": example,
            "task": task,
            "inputs": [
                (spec.get("label", spec["name"]), example.inputs.get(spec["name"], ""))
                for spec in task.cfg.input_fields
            ],
            "target_label": task.cfg.target_field.get("label", "Target"),
            "predictions": selectors.predictions_of(example),
            "is_author": is_author,
            "explanation_form": ExplanationForm(initial={"explanation": example.explanation}),
            "flag_form": FlagForm(),
        },
    )


def _own_example(request, pk: int):
    """The requester's own example; someone else's is a 404 here, even for owners of the task."""
    return get_object_or_404(selectors.own_examples(request.user), pk=pk)


@login_required
@require_POST
def explain(request, pk: int):
    """Save the author's explanation."""
    example = _own_example(request, pk)
    form = ExplanationForm(request.POST)
    if form.is_valid():
        try:
            services.add_explanation(
                example=example, user=request.user, explanation=form.cleaned_data["explanation"]
            )
        except services.ExampleError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, "Explanation saved.")
    else:
        messages.error(request, " ".join(form.errors.get("explanation", ["The explanation is not valid."])))
    return redirect("annotation:outcome", pk=example.pk)


@login_required
@require_POST
def retract(request, pk: int):
    """Retract the author's example: it leaves the counts and the validation queue."""
    example = _own_example(request, pk)
    services.retract_example(example=example, user=request.user)
    messages.success(request, "Example retracted. It no longer counts.")
    return redirect("annotation:outcome", pk=example.pk)


@login_required
@require_POST
def flag(request, pk: int):
    """Flag the author's own example for the task owners."""
    example = _own_example(request, pk)
    form = FlagForm(request.POST)
    if form.is_valid():
        services.flag_example(example=example, user=request.user, reason=form.cleaned_data["reason"])
        messages.success(request, "Example flagged for the task owners.")
    else:
        messages.error(request, " ".join(form.errors.get("reason", ["The reason is not valid."])))
    return redirect("annotation:outcome", pk=example.pk)
