"""Admin of crowd studies for their task's owners: studies (with the exact entry link, a new key, the
payment export, and on the study's page its places, the time left of each running participant and the
money owed), participations ("mark returned"), the ledger and payment batches (read-only). The Task
admin's start-round pages list the live studies the start ends (``start_round_context``)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from django import forms
from django.contrib import admin, messages
from django.core import signing
from django.core.exceptions import ValidationError
from django.db.models import F
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from annotation.assistant.arms import arms_of
from annotation.assistant.selectors import arm_stats
from core.admin_extensions import extend_admin
from core.money import fmt
from tasks.admin import TaskOwnedAdmin
from tasks.models import Task
from tasks.selectors import next_round_number

from . import payments, selectors, services
from .links import entry_link
from .models import LIVE_FIXED, LedgerEntry, Participation, PaymentBatch, Platform, Study, new_entry_key


@admin.action(description="Export unpaid payments (and mark them paid)")
def export_payments_action(modeladmin, request, queryset):
    """One study at a time: the file downloads, and its rows are marked paid."""
    studies = list(queryset[:2])
    if len(studies) != 1:
        modeladmin.message_user(request, "Select exactly one study to export.", messages.WARNING)
        return None
    export = payments.export_payments(study=studies[0], user=request.user)
    if export.batch is None:
        modeladmin.message_user(request, "Nothing to pay.", messages.INFO)
        return None
    response = HttpResponse(export.content, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="payments-{studies[0].public_id}-{export.batch.pk}.csv"'
    )
    return response


@admin.action(description="Give the selected studies a new entry key (old links stop working)")
def rotate_entry_key_action(modeladmin, request, queryset):
    for study in queryset:
        services.rotate_entry_key(study=study)
    modeladmin.message_user(request, f"New entry keys for {queryset.count()} study(ies).", messages.SUCCESS)


def validation_warnings(study: Study) -> list[str]:
    """Why a study's required validations may not be reachable: the task's quorum needs more validators
    than the study has participants besides the author, or the task serves only model-fooling examples
    for validation."""
    if not study.validations_required:
        return []
    task = study.round.task
    warnings = []
    if task.validation_quorum > study.max_participants - 1:
        warnings.append(
            f"Examples cannot settle among the participants alone: quorum {task.validation_quorum} needs "
            f"{task.validation_quorum} validators besides the author, and this study has "
            f"{study.max_participants} place(s)."
        )
    if not task.cfg.validate_non_fooling:
        warnings.append(
            f"{task.name} validates only model-fooling examples: participants can validate only the "
            "examples that fooled the model, so they may find nothing to validate for a while."
        )
    return warnings


#: Salt of the signed entry key an add form carries (``StudyAddForm``).
ENTRY_KEY_SALT = "crowd.study.entry_key"


def signed_entry_key(key: str) -> str:
    """``key`` signed for the add form's hidden field: the server made it, so the form cannot bring
    another."""
    return signing.dumps(key, salt=ENTRY_KEY_SALT)


class ShownEntryKeyWidget(forms.Widget):
    """The entry key in plain sight (``<code id="entry-key-shown">``) and, hidden beside it, the signed
    token that carries it to the save: what the owner reads is what is saved."""

    def render(self, name, value, attrs=None, renderer=None):
        try:
            key = signing.loads(value, salt=ENTRY_KEY_SALT) if value else ""
        except signing.BadSignature:
            key = ""
        return format_html(
            '<code id="entry-key-shown">{}</code><input type="hidden" name="{}" value="{}">',
            key,
            name,
            value or "",
        )

    def value_from_datadict(self, data, files, name):
        return data.get(name)


class StudyAddForm(forms.ModelForm):
    """The Study admin's add form: it shows the entry key the new study will have (the model makes one per
    unsaved row, so without this the page would show one key and the save store another).

    ``entry_key_token`` carries the key shown, signed (``signed_entry_key``); a form sent back with an error
    shows the same key again. A changed token, or the key of a study saved already (the same page sent
    twice), is a field error, with a new key shown to save the form again. A form without the field (an
    older page, a script) gets a new key on save, as before.
    """

    entry_key_token = forms.CharField(
        label="Entry key",
        required=False,
        widget=ShownEntryKeyWidget,
        help_text="The entry link's secret: saving the study stores this key (rotate it later if it leaks).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["entry_key_token"] = signed_entry_key(new_entry_key())

    def _refuse(self, message: str):
        self.data = self.data.copy()  # shows a new key with the error
        self.data[self.add_prefix("entry_key_token")] = signed_entry_key(new_entry_key())
        raise ValidationError(message)

    def clean_entry_key_token(self) -> str:
        token = self.cleaned_data.get("entry_key_token") or ""
        if not token:
            return ""
        try:
            key = signing.loads(token, salt=ENTRY_KEY_SALT)
        except signing.BadSignature:
            self._refuse(
                "The entry key shown was changed; it was not saved. Save the form again to use the new key "
                "shown."
            )
        if Study.objects.filter(entry_key=key).exists():
            self._refuse(
                "This entry key is already saved with another study (was this form sent twice?). Save the "
                "form again to use the new key shown."
            )
        return key

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("entry_key_token"):
            self.instance.entry_key = cleaned["entry_key_token"]
        return cleaned


#: Between the lines of a figure on the study page.
LINE_BREAK = mark_safe("<br>")  # noqa: S308 (a constant)


def _minutes_left(deadline, now) -> int:
    return max(0, math.ceil((deadline - now).total_seconds() / 60))


def _utc(moment) -> str:
    return moment.astimezone(UTC).strftime("%H:%M")


@admin.register(Study)
class StudyAdmin(TaskOwnedAdmin):
    task_path = "round__task"
    owners_can_add = True
    list_display = ["name", "round", "platform", "is_open", "max_participants", "created_at"]
    list_filter = ["platform", "is_open"]
    list_select_related = ["round__task"]
    search_fields = ["name"]
    readonly_fields = [
        "public_id",
        "entry_link_shown",
        "entry_key",
        "created_at",
        "places_shown",
        "time_left_shown",
        "money_owed_shown",
        "assistant_arms_shown",
    ]
    #: Shown on a saved study's page only (``get_fields``): the figures, and what is made on save (a public
    #: id shown on the add form would be a fresh uuid each time, not the one saved).
    FIGURES = [
        "places_shown",
        "time_left_shown",
        "money_owed_shown",
        "assistant_arms_shown",
        "public_id",
        "entry_link_shown",
        "created_at",
    ]
    fields = [
        "name",
        "round",
        "platform",
        "examples_required",
        "validations_required",
        "reward",
        "pay_per_example",
        "pay_per_validation",
        "bonus_per_verified_fooling",
        "currency",
        "max_participants",
        "completion_code",
        "completion_url",
        "time_limit_minutes",
        "consent_text",
        "is_open",
        "places_shown",
        "time_left_shown",
        "money_owed_shown",
        "assistant_arms_shown",
        "public_id",
        "entry_key",
        "entry_link_shown",
        "created_at",
    ]
    actions = [export_payments_action, rotate_entry_key_action]

    def get_form(self, request, obj=None, **kwargs):
        self._request = request
        if obj is None:
            kwargs["form"] = StudyAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        """The add form shows the key it will save (``StudyAddForm``), and no figures, public id or link yet."""
        fields = list(super().get_fields(request, obj))
        if obj is None:
            fields = [f for f in fields if f not in self.FIGURES]
            fields[fields.index("entry_key")] = "entry_key_token"
        return fields

    def get_readonly_fields(self, request, obj=None):
        """A study with participants shows its pay, amounts and round read-only (``Study.clean``)."""
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.pk is not None and obj.participations.exists():
            fields += ["round", *LIVE_FIXED]
        return fields

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """A new study picks among open rounds only (``Round.is_open``: current and not closed)."""
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        adding = getattr(request.resolver_match, "url_name", "") == "crowd_study_add"
        if db_field.name == "round" and adding and field is not None:
            field.queryset = field.queryset.filter(is_closed=False, task__current_round=F("pk"))
        return field

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        for warning in validation_warnings(obj):
            messages.warning(request, warning)

    def _overview(self, obj: Study) -> tuple[selectors.StudyOverview, datetime]:
        """The study's figures and the moment they were read, once per page (the three fields below share
        them)."""
        cached = getattr(obj, "_study_overview", None)
        if cached is None:
            now = timezone.now()
            cached = obj._study_overview = (selectors.study_overview(obj, now), now)
        return cached

    @admin.display(description="Assistant arms")
    def assistant_arms_shown(self, obj: Study) -> str:
        """The study's round's figures per arm of the task's annotation-assistant study
        (``annotation.assistant.selectors.arm_stats``), or why there are none."""
        if obj.pk is None:
            return "–"
        if not arms_of(obj.round.task.cfg):
            return "The task has no annotation-assistant study (config assistant.arms)."
        stats = arm_stats(obj.round)
        if not any(arm.people for arm in stats):
            return "No one has been given an arm yet."
        # The template escapes every value it shows.
        return mark_safe(  # noqa: S308
            render_to_string(
                "annotation/assistant/_arms.html", {"section": {"arm_round": obj.round, "arm_stats": stats}}
            )
        )

    @admin.display(description="Places")
    def places_shown(self, obj: Study) -> str:
        """``2 of 3 taken: 1 active, 1 completed · 1 returned, 0 abandoned`` (an active participation past its
        time limit counts as abandoned), and how many completed early when the round ended."""
        if obj.pk is None:
            return "–"
        figures, _ = self._overview(obj)
        text = (
            f"{figures.taken} of {figures.max_participants} taken: {figures.active} active, "
            f"{figures.completed} completed · {figures.returned} returned, {figures.abandoned} abandoned"
        )
        if figures.ended_early:
            text += f" · {figures.ended_early} completed early when the round ended"
        return text

    @admin.display(description="Time left")
    def time_left_shown(self, obj: Study) -> str:
        """Each running participant (platform id) with the minutes left of their time limit, soonest first."""
        if obj.pk is None:
            return "–"
        figures, now = self._overview(obj)
        if not figures.running:
            if obj.ended_at is not None:
                return (
                    f"The study ended at {_utc(obj.ended_at)} UTC on {obj.ended_at:%Y-%m-%d}, with its round."
                )
            return "No one is working on it now."
        return format_html_join(
            LINE_BREAK,
            "{}: {} min left (until {} UTC)",
            (
                (_participant_id(participation), _minutes_left(deadline, now), _utc(deadline))
                for participation, deadline in figures.running
            ),
        )

    @admin.display(description="Money owed")
    def money_owed_shown(self, obj: Study) -> str:
        """Ledger rows not yet paid, per currency (2 places, half up); the rewards among them, which Prolific
        and MTurk pay themselves on approval."""
        if obj.pk is None:
            return "–"
        figures, _ = self._overview(obj)
        if not figures.owed:
            return "Nothing owed: every row is paid."
        lines = []
        for owed in figures.owed:
            rows = f"{owed.rows} row{'' if owed.rows == 1 else 's'}"
            line = f"{owed.currency} {fmt(owed.amount)} in {rows} not yet paid"
            if owed.rewards and obj.platform != Platform.GENERIC:
                line += f" (of which {fmt(owed.rewards)} in rewards the platform pays on approval)"
            lines.append(line)
        return format_html_join(LINE_BREAK, "{}", ((line,) for line in lines))

    @admin.display(description="Entry link")
    def entry_link_shown(self, obj: Study) -> str:
        if obj.pk is None:
            return "Shown once the study is saved."
        request = getattr(self, "_request", None)
        base = request.build_absolute_uri("/") if request is not None else ""
        return format_html("<code>{}</code>", entry_link(obj, base))


@admin.action(description="Mark returned (frees the place)")
def mark_returned_action(modeladmin, request, queryset):
    freed = sum(services.return_study(participation=p) for p in queryset)
    modeladmin.message_user(request, f"Marked {freed} participation(s) returned.", messages.SUCCESS)


@admin.register(Participation)
class ParticipationAdmin(TaskOwnedAdmin):
    task_path = "study__round__task"
    list_display = [
        "id",
        "study",
        "user",
        "status",
        "ended_early",
        "started_at",
        "consented_at",
        "completed_at",
        "ended_at",
    ]
    list_filter = ["status", ("study", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["study__round__task", "user"]
    readonly_fields = [
        "study",
        "round",
        "user",
        "session_id",
        "platform_study_id",
        "assignment_id",
        "hit_id",
        "turk_submit_to",
        "status",
        "started_at",
        "consented_at",
        "completed_at",
        "ended_at",
        "ended_early",
    ]
    fields = readonly_fields
    actions = [mark_returned_action]

    def has_add_permission(self, request):
        return False


@admin.register(LedgerEntry)
class LedgerEntryAdmin(TaskOwnedAdmin):
    task_path = "study__round__task"
    list_display = ["event_key", "worker", "kind", "amount", "currency", "study", "created_at", "paid_at"]
    list_filter = ["kind", ("study", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["study__round__task", "worker"]
    search_fields = ["event_key", "worker__username"]
    readonly_fields = [
        "study",
        "round",
        "participation",
        "worker",
        "kind",
        "event_key",
        "amount",
        "currency",
        "created_at",
        "paid_at",
        "batch",
    ]
    fields = readonly_fields

    def has_add_permission(self, request):
        return False


@admin.register(PaymentBatch)
class PaymentBatchAdmin(TaskOwnedAdmin):
    task_path = "study__round__task"
    list_display = ["id", "study", "created_at", "created_by", "n_workers", "n_entries"]
    list_select_related = ["study__round__task", "created_by"]
    readonly_fields = ["study", "created_at", "created_by", "n_workers", "n_entries", "content"]
    fields = readonly_fields

    def has_add_permission(self, request):
        return False


def _participant_id(participation: Participation) -> str:
    identity = getattr(participation.user, "crowd_identity", None)
    return identity.participant_id if identity is not None else participation.user.username


# --- The Task admin's start-round pages (models_registry) ---------------------------------------------------


def start_round_context(request, task: Task, *, models, closing_round) -> dict:
    """What the start-round pages show of crowd studies (``models_registry.admin.candidates_context``):
    ``live_studies``, the studies starting the next round ends (``services.end_stranded_studies``): those
    of the round it closes (``closing_round``, or with none, every live study of the task) that are open or
    have active participants, each ``{"study", "url" (its admin page), "platform", "active" (participants
    working now, within their time limit)}``; and ``live_studies_next_round``, the number of the round
    started. Two queries, three when there are studies."""
    studies = selectors.live_studies(task.pk)
    if closing_round is not None:
        studies = studies.filter(round=closing_round)
    now = timezone.now()
    live = []
    for study in studies:
        active = sum(
            1
            for started in study.participations.filter(status=Participation.Status.ACTIVE).values_list(
                "started_at", flat=True
            )
            if now <= started + study.time_limit
        )
        live.append(
            {
                "study": study,
                "url": reverse("admin:crowd_study_change", args=[study.pk]),
                "platform": study.get_platform_display(),
                "active": active,
            }
        )
    return {"live_studies": live, "live_studies_next_round": next_round_number(task) if live else None}


extend_admin(Task, context={"start_round": start_round_context})
