"""Admin for validations: read-only (verdicts are written by the validation service, which keeps counts).

Also adds the owner-verdict actions to the Example admin (``annotation.admin``, an extension through
``core.admin_extensions``): settle the selected examples as correct, incorrect or flagged; overturn
settled ones, which only leads to a confirmation page (``overturn_view``: its GET shows what will
change, its POST overturns); and the gold actions (mark the selected examples as gold with a known
verdict, ``validation.gold``). Gold items and gold answers have admins of their own, and the Task admin
a "Gold accuracy" page (per validator).
"""

from __future__ import annotations

from functools import partial
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from annotation.models import Example
from core.admin_extensions import ObjectTool, extend_admin
from core.text_rules import ascii_id
from tasks.admin import TaskOwnedAdmin
from tasks.models import Task

from . import selectors
from .gold import selectors as gold_selectors
from .gold import services as gold
from .models import GoldAnswer, GoldItem, Validation
from .services import VerdictError, overturn_verdict, submit_validation


@admin.register(Validation)
class ValidationAdmin(TaskOwnedAdmin):
    """Validations of the owner's tasks' examples."""

    task_path = "example__round__task"
    list_display = [
        "id",
        "example",
        "validator",
        "verdict",
        "corrected_label",
        "is_owner_verdict",
        "created_at",
    ]
    list_select_related = ["example__round__task", "validator"]
    list_filter = ["verdict", "is_owner_verdict", ("example__round", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["validator__username", "reason"]
    readonly_fields = [
        "example",
        "validator",
        "verdict",
        "corrected_label",
        "reason",
        "is_owner_verdict",
        "created_at",
    ]
    fields = readonly_fields

    def has_add_permission(self, request):
        return False


def _owner_verdicts(modeladmin, request, queryset, verdict: str, *, decide, done: str, not_done: str) -> None:
    """Apply ``decide(example, owner, verdict)`` (a validation service returning a ``VerdictOutcome``; it
    checks ownership) to each selected example, then tell the owner how many it settled (``done``, a
    format string of ``n`` and ``verdict``) and why the others were refused (at most 20 reasons)."""
    settled, refused = 0, []
    for example in queryset.select_related("round__task"):
        try:
            settled += decide(example, request.user, verdict).settled
        except VerdictError as exc:
            refused.append(f"example {example.pk}: " + " ".join(m for ms in exc.errors.values() for m in ms))
    modeladmin.message_user(request, done.format(n=settled, verdict=verdict), messages.SUCCESS)
    if refused:
        modeladmin.message_user(request, f"{not_done}: " + "; ".join(refused[:20]), messages.WARNING)


def _settle(modeladmin, request, queryset, verdict: str) -> None:
    """Owner verdict on each selected pending example (``services.submit_validation`` in owner mode)."""
    _owner_verdicts(
        modeladmin,
        request,
        queryset,
        verdict,
        decide=lambda example, owner, v: submit_validation(
            example=example, validator=owner, verdict=v, owner_mode=True
        ),
        done="Settled {n} example(s) as {verdict}.",
        not_done="Not settled",
    )


@admin.action(description="Settle as validated correct (owner verdict)")
def settle_correct(modeladmin, request, queryset):
    _settle(modeladmin, request, queryset, "correct")


@admin.action(description="Settle as validated incorrect (owner verdict)")
def settle_incorrect(modeladmin, request, queryset):
    _settle(modeladmin, request, queryset, "incorrect")


@admin.action(description="Settle as flagged (owner verdict)")
def settle_flagged(modeladmin, request, queryset):
    _settle(modeladmin, request, queryset, "flagged")


extend_admin(Example, actions=[settle_correct, settle_incorrect, settle_flagged])


#: The most examples one overturn confirmation page takes (their ids travel in its address).
MAX_OVERTURN = 200
OVERTURN_URL_NAME = "annotation_example_overturn"


def _overturn(modeladmin, request, queryset, verdict: str):
    """Send the owner to the confirmation page of overturning the selected examples (``overturn_view``);
    the action itself changes nothing."""
    ids = sorted(queryset.values_list("pk", flat=True)[: MAX_OVERTURN + 1])
    if len(ids) > MAX_OVERTURN:
        modeladmin.message_user(
            request, f"Select at most {MAX_OVERTURN} examples to overturn at once.", messages.WARNING
        )
        return None
    query = urlencode({"verdict": verdict, "ids": ",".join(map(str, ids))}, safe=",")
    return HttpResponseRedirect(f"{reverse(f'admin:{OVERTURN_URL_NAME}')}?{query}")


def _overturn_ids(values: list[str]) -> list[int] | None:
    """The example ids of the confirmation page's ``ids`` (comma-separated and/or repeated), or None
    when one is not an id or there are none or too many."""
    parts = [part for value in values for part in value.split(",") if part != ""]
    ids = [ascii_id(part) for part in parts]
    if not ids or len(ids) > MAX_OVERTURN or any(i is None for i in ids):
        return None
    return ids


def overturn_view(model_admin, request):
    """Overturn settled examples with an owner verdict, after a confirmation
    (``/admin/annotation/example/overturn/?verdict=<correct|incorrect|flagged>&ids=<id>,<id>``).

    GET shows, for the examples of the requester's tasks among ``ids``, their status now and after, what
    else changes (a verified model-fooling example's bonus), and why the others are left as they are
    (``selectors.overturn_preview``); it writes nothing. POST (the page's form, with an optional
    ``reason`` kept with the owner verdict) overturns each through ``services.overturn_verdict`` and
    returns to the example list with how many changed and why the others did not. Examples of tasks
    the requester does not own are neither shown nor changed. An unknown verdict or a malformed id
    list is a 404."""
    data = request.POST if request.method == "POST" else request.GET
    verdict = data.get("verdict", "")
    ids = _overturn_ids(data.getlist("ids"))
    if verdict not in Validation.Verdict.values or ids is None:
        raise Http404("No such overturn.")
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    examples = model_admin.get_queryset(request).filter(pk__in=ids)
    changelist = reverse("admin:annotation_example_changelist")
    if request.method == "POST":
        reason = data.get("reason", "")  # the service refuses one too long, per example
        _owner_verdicts(
            model_admin,
            request,
            examples,
            verdict,
            decide=lambda example, owner, v: overturn_verdict(
                example=example, owner=owner, verdict=v, reason=reason
            ),
            done="Overturned {n} example(s) to {verdict}.",
            not_done="Not overturned",
        )
        return HttpResponseRedirect(changelist)
    rows = selectors.overturn_preview(examples, request.user, verdict)
    changing = [row for row in rows if row.refusal is None]
    new_status = Example.Status(selectors.STATUS_OF_VERDICT[verdict]).label
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": f"Overturn to {new_status.lower()}",
        "verdict": verdict,
        "new_status": new_status,
        "changing": changing,
        "left": [row for row in rows if row.refusal is not None],
        "changelist": changelist,
    }
    return TemplateResponse(request, "validation/admin/overturn_confirm.html", context)


def _overturn_urls(model_admin) -> list:
    view = model_admin.admin_site.admin_view(partial(overturn_view, model_admin))
    return [path("overturn/", view, name=OVERTURN_URL_NAME)]


@admin.action(description="Overturn a settled example: validated correct (owner verdict; asks first)")
def overturn_correct(modeladmin, request, queryset):
    return _overturn(modeladmin, request, queryset, "correct")


@admin.action(description="Overturn a settled example: validated incorrect (owner verdict; asks first)")
def overturn_incorrect(modeladmin, request, queryset):
    return _overturn(modeladmin, request, queryset, "incorrect")


@admin.action(description="Overturn a settled example: flagged (owner verdict; asks first)")
def overturn_flagged(modeladmin, request, queryset):
    return _overturn(modeladmin, request, queryset, "flagged")


extend_admin(Example, actions=[overturn_correct, overturn_incorrect, overturn_flagged], urls=[_overturn_urls])


# ---------------------------------------------------------------------------------------------------
# Gold items (validation.gold)


@admin.register(GoldItem)
class GoldItemAdmin(TaskOwnedAdmin):
    """Gold items of the owner's tasks: the known verdict, answers and how many were right. Marked from
    the Example admin's actions (or the gold API); here the note can be edited and items retired."""

    task_path = "task"
    list_display = [
        "id",
        "example",
        "round_number",
        "verdict",
        "n_answers",
        "n_correct",
        "created_at",
        "retired_at",
    ]
    list_filter = ["verdict", ("task", admin.RelatedOnlyFieldListFilter), "retired_at"]
    readonly_fields = ["task", "example", "verdict", "created_by", "created_at", "retired_at"]
    fields = ["task", "example", "verdict", "note", "created_by", "created_at", "retired_at"]
    actions = ["retire"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("example__round")
            .annotate(
                n_answers=Count("answers"), n_correct=Count("answers", filter=Q(answers__is_correct=True))
            )
        )

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # retire instead: answers keep their gold item

    @admin.display(description="Round", ordering="example__round__number")
    def round_number(self, obj: GoldItem) -> int:
        return obj.example.round.number

    @admin.display(description="Answers", ordering="n_answers")
    def n_answers(self, obj: GoldItem) -> int:
        return obj.n_answers

    @admin.display(description="Right", ordering="n_correct")
    def n_correct(self, obj: GoldItem) -> int:
        return obj.n_correct

    @admin.action(description="Stop serving the selected gold items (delete if unanswered, else retire)")
    def retire(self, request, queryset):
        done = {"deleted": 0, "retired": 0}
        for item in queryset.select_related("task"):
            try:
                done[gold.retire_gold(gold=item, by=request.user)] += 1
            except gold.GoldError as exc:
                self.message_user(request, f"Gold item {item.pk}: {exc}", messages.WARNING)
        self.message_user(request, f"Deleted {done['deleted']}, retired {done['retired']}.", messages.SUCCESS)


@admin.register(GoldAnswer)
class GoldAnswerAdmin(TaskOwnedAdmin):
    """Validators' answers on gold items, read-only (written by the validation service)."""

    task_path = "gold__task"
    list_display = ["id", "gold", "validator", "verdict", "is_correct", "created_at"]
    list_select_related = ["gold", "validator"]
    list_filter = ["is_correct", "verdict", ("gold__task", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["validator__username"]
    readonly_fields = [
        "gold",
        "validator",
        "verdict",
        "corrected_label",
        "reason",
        "is_correct",
        "created_at",
    ]
    fields = readonly_fields

    def has_add_permission(self, request):
        return False


def _mark_gold(modeladmin, request, queryset, verdict: str) -> None:
    """Mark each selected example as gold with ``verdict`` (the service checks ownership)."""
    marked, refused = 0, []
    for example in queryset.select_related("round__task"):
        try:
            gold.mark_gold(task=example.round.task, example=example, verdict=verdict, by=request.user)
        except gold.GoldError as exc:
            refused.append(f"example {example.pk}: " + " ".join(m for ms in exc.errors.values() for m in ms))
        else:
            marked += 1
    modeladmin.message_user(request, f"Marked {marked} example(s) as gold ({verdict}).", messages.SUCCESS)
    if refused:
        modeladmin.message_user(request, "Not marked: " + "; ".join(refused[:20]), messages.WARNING)


@admin.action(description="Mark as gold: known verdict correct")
def gold_correct(modeladmin, request, queryset):
    _mark_gold(modeladmin, request, queryset, "correct")


@admin.action(description="Mark as gold: known verdict incorrect")
def gold_incorrect(modeladmin, request, queryset):
    _mark_gold(modeladmin, request, queryset, "incorrect")


@admin.action(description="Mark as gold: known verdict flagged")
def gold_flagged(modeladmin, request, queryset):
    _mark_gold(modeladmin, request, queryset, "flagged")


extend_admin(Example, actions=[gold_correct, gold_incorrect, gold_flagged])


def gold_accuracy_view(model_admin, request, object_id):
    """The task's gold accuracy per validator (``gold_selectors.gold_accuracy_table``), for its owners."""
    task = model_admin.get_object(request, unquote(object_id))
    if task is None:
        raise Http404("No such task.")
    if not model_admin.has_change_permission(request, task):
        raise PermissionDenied
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "original": task,
        "task": task,
        "rows": gold_selectors.gold_accuracy_table(task),
        "title": f"Gold accuracy on {task}",
        "change_url": reverse("admin:tasks_task_change", args=[task.pk]),
    }
    return TemplateResponse(request, "validation/admin/gold_accuracy.html", context)


def _gold_accuracy_urls(model_admin) -> list:
    view = model_admin.admin_site.admin_view(partial(gold_accuracy_view, model_admin))
    return [path("<path:object_id>/gold-accuracy/", view, name="tasks_task_gold_accuracy")]


extend_admin(Task, urls=[_gold_accuracy_urls], object_tools=[ObjectTool("Gold accuracy", "gold_accuracy")])
