"""Admin for tasks, rounds and contexts, and the owner-scoped base class the other apps' admins use.

Task owners are staff users without model permissions: ``TaskOwnedAdmin`` lets them see and change
the objects of the tasks they own (and nothing else). Superusers and staff granted Django model
permissions see everything as usual.
"""

from __future__ import annotations

import json
import re

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.widgets import AutocompleteSelectMultiple
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from core import audit
from core.admin_extensions import ExtensibleAdmin, ObjectTool, extend_admin
from core.form_fields import JSONTextField
from core.text_rules import lone_surrogate_path

from . import qualification, services
from .config_checks import check_config
from .models import Context, Quiz, QuizAttempt, QuizQuestion, Round, Task, TaskWorker, TutorialItem
from .round_stats import rate, with_round_counts


def _owned_task_ids(request) -> set[int]:
    """Ids of the tasks the requesting user owns, cached on the request."""
    if not hasattr(request, "_owned_task_ids"):
        user = request.user
        request._owned_task_ids = (
            set(Task.objects.filter(owners=user).values_list("pk", flat=True))
            if user.is_authenticated
            else set()
        )
    return request._owned_task_ids


class TaskOwnedAdmin(ExtensibleAdmin):
    """A ModelAdmin whose rows belong to a task; owners of that task may view and change them.

    Set ``task_path`` to the lookup from the model to its task (``"task"``, ``"round__task"``,
    ``"example__round__task"``) or ``""`` for Task itself. Owners may add rows when ``owners_can_add``;
    deleting needs the Django model permission (the data model protects its rows anyway).
    """

    task_path = "task"
    owners_can_add = False

    def _perm(self, request, action: str) -> bool:
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.{action}_{opts.model_name}")

    def _sees_all(self, request) -> bool:
        return request.user.is_superuser or self._perm(request, "view") or self._perm(request, "change")

    def _is_owner(self, request) -> bool:
        return request.user.is_active and request.user.is_staff and bool(_owned_task_ids(request))

    def _task_id_of(self, obj) -> int | None:
        if not self.task_path:
            return obj.pk
        *parents, last = self.task_path.split("__")
        for name in parents:
            obj = getattr(obj, name, None)
            if obj is None:
                return None
        return getattr(obj, f"{last}_id", None)

    def _owns(self, request, obj) -> bool:
        return self._is_owner(request) and (obj is None or self._task_id_of(obj) in _owned_task_ids(request))

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if self._sees_all(request):
            return qs
        lookup = f"{self.task_path}__in" if self.task_path else "pk__in"
        return qs.filter(**{lookup: _owned_task_ids(request)})

    def has_module_permission(self, request):
        return super().has_module_permission(request) or self._is_owner(request)

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or self._owns(request, obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) or self._owns(request, obj)

    def has_add_permission(self, request):
        return super().has_add_permission(request) or (self.owners_can_add and self._is_owner(request))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """Owners pick only among their own tasks, rounds and contexts."""
        if not self._sees_all(request):
            owned = _owned_task_ids(request)
            if db_field.name == "task":
                kwargs["queryset"] = Task.objects.filter(pk__in=owned)
            elif db_field.name == "round":
                kwargs["queryset"] = Round.objects.filter(task__in=owned).select_related("task")
            elif db_field.name == "context":
                kwargs["queryset"] = Context.objects.filter(task__in=owned).select_related("round__task")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ConfigJSONField(JSONTextField):
    """The task config as JSON text: shown pretty-printed (indent 2, keys in stored order, non-ASCII kept)
    in a large monospace box; a syntax error is reported with its line and column."""

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value  # the text as typed, so the owner can correct it
        escape = lone_surrogate_path(value) is not None  # one stored before it was refused stays showable
        return json.dumps(value, indent=2, ensure_ascii=escape, cls=self.encoder)

    def to_python(self, value):
        if not self.disabled and isinstance(value, str) and value.strip():
            try:
                json.loads(value, cls=self.decoder)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.", code="invalid"
                ) from None
        return super().to_python(value)


class OwnerPickerWidget(AutocompleteSelectMultiple):
    """The owner picker: Django's autocomplete (a search of ``accounts.admin``) without select2's
    "remove all" cross, which it renders inside its list where only items belong (each owner has its own
    cross); ``owner_picker.js`` names its search box."""

    def build_attrs(self, base_attrs, extra_attrs=None):
        attrs = super().build_attrs(base_attrs, extra_attrs=extra_attrs)
        attrs["data-allow-clear"] = "false"
        return attrs


class TaskAdminForm(forms.ModelForm):
    """Checks the config JSON against the task config schema and names every problem under the field
    (each message starts with its JSON path, ``config['target_field']['labels']: ...``)."""

    add_owners = forms.CharField(
        required=False,
        label="Add owners by username",
        help_text="Usernames of staff accounts, separated by commas or spaces: the same as choosing them in "
        "the search box above, for a browser without JavaScript.",
    )

    class Media:
        css = {"all": ["tasks/admin/json_editor.css"]}
        js = ["tasks/admin/json_editor.js", "tasks/admin/owner_picker.js"]

    class Meta:
        model = Task
        fields = [
            "name",
            "slug",
            "config",
            "instructions",
            "owners",
            "add_owners",
            "current_round",
            "validation_quorum",
            "is_active",
            "daily_example_cap",
            "daily_validation_cap",
            "requires_allow_list",
            "gold_share",
            "gold_accuracy_threshold",
            "gold_min_answers",
        ]
        field_classes = {"config": ConfigJSONField}
        widgets = {
            "config": forms.Textarea(
                attrs={
                    "rows": 28,
                    "class": "json-editor",
                    "spellcheck": "false",
                    "autocapitalize": "off",
                    "autocomplete": "off",
                }
            )
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "config" in self.fields:
            self.fields["config"].help_text = (
                "The task definition as JSON, checked against the task config schema on save: one message "
                "per problem, its JSON path first (config['target_field']['labels']: ...)."
            )
        if "current_round" in self.fields:
            rounds = Round.objects.filter(task=self.instance) if self.instance.pk else Round.objects.none()
            self.fields["current_round"].queryset = rounds.select_related("task")
            self.fields[
                "current_round"
            ].help_text = "The one round that accepts examples (a round of this task)."

    def clean_add_owners(self) -> list:
        """The active staff accounts named (commas or spaces between names); unknown names are an error."""
        text = self.cleaned_data.get("add_owners") or ""
        names = [name for name in dict.fromkeys(re.split(r"[\s,]+", text)) if name]
        if not names:
            return []
        found = list(get_user_model().objects.filter(username__in=names, is_active=True, is_staff=True))
        missing = sorted(set(names) - {u.username for u in found})
        if missing:
            raise ValidationError(f"No active staff account has the username: {', '.join(missing)}.")
        return found

    def clean(self):
        cleaned = super().clean()
        added = cleaned.get("add_owners") or []
        if added and "owners" in cleaned:
            current = list(cleaned["owners"] or [])
            cleaned["owners"] = current + [u for u in added if u not in current]
        return cleaned

    def clean_config(self):
        config = self.cleaned_data.get("config")
        # ValidationError lists each problem with its JSON path; then the checks of the apps above (an
        # assistant's model must be a generative model of the registry: tasks.config_checks).
        check_config(config, self.instance if self.instance.pk else None)
        return config

    def clean_current_round(self):
        round_ = self.cleaned_data.get("current_round")
        if round_ is not None and round_.is_closed and round_.pk != self.instance.current_round_id:
            raise ValidationError(f"Round {round_.number} is closed; open a new round instead.")
        return round_

    def _post_clean(self):
        # Task.clean() re-validates the config; with an invalid config it would repeat the error above
        # the form (for a new task as "must be a JSON object"). The field error already says it all.
        if self.has_error("config"):
            return
        super()._post_clean()


class RoundInline(admin.TabularInline):
    """The task's rounds, read-only here (edit them on the round page)."""

    model = Round
    fields = ["number", "is_closed", "started_at", "closed_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        # The parent task is already checked; an owner without model permissions sees its rounds.
        return super().has_view_permission(request, obj) or self.admin_site.get_model_admin(
            Round
        ).has_view_permission(request)


def only_one_owned_task(modeladmin, request, tasks: list[Task]) -> Task | None:
    """The one task of an admin action's selection, if the user owns it; else None, with a message.

    For actions on tasks that act on one task at a time (train its next target, export its examples).
    """
    if len(tasks) != 1:
        modeladmin.message_user(request, "Select exactly one task.", level=messages.ERROR)
        return None
    if not tasks[0].is_owner(request.user):
        modeladmin.message_user(request, "Only the task's owners can do this.", level=messages.ERROR)
        return None
    return tasks[0]


class _ParentTaskInline:
    """An inline whose parent belongs to a task (the Task itself, or a Quiz): the task's owners may view,
    add, change and delete its rows without Django model permissions, as on ``TaskOwnedAdmin`` pages."""

    def _task_of_parent(self, obj) -> Task | None:
        return obj if isinstance(obj, Task) else getattr(obj, "task", None)

    def _parent_owned(self, request, obj) -> bool:
        if not (request.user.is_active and request.user.is_staff):
            return False
        if obj is None:  # a new parent: its task field offers only the owner's tasks
            return bool(_owned_task_ids(request))
        task = self._task_of_parent(obj)
        return task is not None and task.pk in _owned_task_ids(request)

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) or self._parent_owned(request, obj)

    def has_add_permission(self, request, obj=None):
        return super().has_add_permission(request, obj) or self._parent_owned(request, obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) or self._parent_owned(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) or self._parent_owned(request, obj)


class TutorialItemInline(_ParentTaskInline, admin.StackedInline):
    """The worked examples of the task's tutorial (``/tasks/<slug>/tutorial/``), in ``position`` order."""

    model = TutorialItem
    fields = ["position", "text", "label", "model_answer", "fooled_model", "note"]
    extra = 0


class QuizQuestionInline(_ParentTaskInline, admin.StackedInline):
    """A quiz's questions; ``QuizQuestion.clean`` checks the choices (two or more, all different) and that
    the answer is one of them."""

    model = QuizQuestion
    fields = ["position", "text", "choices", "answer", "explanation"]
    extra = 0


class QuizAttemptInline(_ParentTaskInline, admin.TabularInline):
    """Workers' attempts at the quiz, read-only."""

    model = QuizAttempt
    fields = ["user", "n_correct", "n_questions", "passed", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Quiz)
class QuizAdmin(TaskOwnedAdmin):
    """A task's qualification quiz (``/tasks/<slug>/quiz/``): pass mark, attempts, questions, attempts."""

    owners_can_add = True
    list_display = ["__str__", "task", "is_active", "pass_mark", "max_attempts", "updated_at"]
    list_select_related = ["task"]
    fields = ["task", "is_active", "introduction", "pass_mark", "max_attempts"]
    inlines = [QuizQuestionInline, QuizAttemptInline]


class TaskWorkerAdminForm(forms.ModelForm):
    """A worker's standing; a new row names its worker by ``username`` (no list of every account).
    ``held`` holds them for review (with ``held_reason``) or releases the hold; ``TaskWorkerAdmin.save_model``
    applies it through ``qualification.hold_for_review`` / ``release_hold``."""

    username = forms.CharField(
        max_length=150, required=False, help_text="The worker's username, exactly as they sign in."
    )
    held = forms.BooleanField(
        required=False,
        label="Held for review",
        help_text="Tick to hold them (they may not write or validate here until released), untick to "
        "release the hold. The reason below is kept while held.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "held" in self.fields:
            self.fields["held"].initial = self.instance.held_at is not None

    class Meta:
        model = TaskWorker
        fields = ["task", "listing", "listing_reason", "held_reason"]

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk is not None:
            return cleaned
        username = (cleaned.get("username") or "").strip()
        user = get_user_model().objects.filter(username=username).first() if username else None
        if user is None:
            self.add_error("username", "No account has this username." if username else "Give a username.")
            return cleaned
        task = cleaned.get("task")
        if task is not None and TaskWorker.objects.filter(task=task, user=user).exists():
            self.add_error("username", f"{username} already has a standing on {task.slug}; change that one.")
            return cleaned
        self.instance.user = user
        return cleaned


def _set_listing(modeladmin, request, queryset, listing: str, done: str) -> None:
    """Set ``listing`` on the selected workers the user may change (``queryset`` is owner-scoped), one
    ``qualification.set_listing`` each (a save, so the audit log records each change with the request's
    user as actor, core/audit.py), all or none."""
    reason = f"{done.capitalize()} by {request.user.username} in the admin." if listing else ""
    with transaction.atomic():
        workers = list(queryset.select_related("task", "user"))
        for worker in workers:
            qualification.set_listing(task=worker.task, user=worker.user, listing=listing, reason=reason)
    modeladmin.message_user(request, f"{len(workers)} worker(s) {done}.", messages.SUCCESS)


def _admin_hold_reason(request) -> str:
    return f"Held by {request.user.username} in the admin."


@admin.register(TaskWorker)
class TaskWorkerAdmin(TaskOwnedAdmin):
    """Workers' standing on the owner's tasks: block and allow lists, holds for review, onboarding."""

    owners_can_add = True
    form = TaskWorkerAdminForm
    list_display = ["user", "task", "listing", "held_at", "tutorial_seen_at", "quiz_passed_at", "updated_at"]
    list_select_related = ["user", "task"]
    list_filter = [
        "listing",
        ("held_at", admin.EmptyFieldListFilter),
        ("task", admin.RelatedOnlyFieldListFilter),
    ]
    search_fields = ["user__username"]
    actions = ["block", "allow", "remove_from_lists", "hold", "release_hold"]

    def get_fields(self, request, obj=None):
        who = ["username"] if obj is None else ["user"]
        return [
            "task",
            *who,
            "listing",
            "listing_reason",
            "held",
            "held_at",
            "held_reason",
            "tutorial_seen_at",
            "quiz_passed_at",
            "created_at",
            "updated_at",
        ]

    def get_readonly_fields(self, request, obj=None):
        fixed = ["held_at", "tutorial_seen_at", "quiz_passed_at", "created_at", "updated_at"]
        return fixed if obj is None else ["task", "user", *fixed]

    def save_model(self, request, obj, form, change):
        """Save the listing and reasons, then place or lift the hold as ``held`` says, through
        ``qualification`` (its conditional updates write the audit entries, actor the request's user). A
        hold without a reason gets "Held by <username> in the admin."."""
        held = bool(form.cleaned_data.get("held"))
        was_held = obj.held_at is not None
        reason = obj.held_reason
        if held != was_held:  # the hold's own write sets or clears the reason
            obj.held_reason = form.initial.get("held_reason", "") if change else ""
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if held and not was_held:
                qualification.hold_for_review(
                    task=obj.task, user=obj.user, reason=reason.strip() or _admin_hold_reason(request)
                )
            elif was_held and not held:
                qualification.release_hold(task=obj.task, user=obj.user)
        obj.refresh_from_db()

    @admin.action(description="Hold the selected workers for review")
    def hold(self, request, queryset):
        """Hold the selected workers who are not held, one ``qualification.hold_for_review`` each (it
        writes the audit log's entry); reason "Held by <username> in the admin.", all or none."""
        with transaction.atomic():
            free = queryset.filter(held_at__isnull=True).select_related("task", "user")
            reason = _admin_hold_reason(request)
            n = sum(qualification.hold_for_review(task=w.task, user=w.user, reason=reason) for w in free)
        self.message_user(request, f"Held {n} worker(s) for review.", messages.SUCCESS)

    @admin.action(description="Block the selected workers on their task")
    def block(self, request, queryset):
        _set_listing(self, request, queryset, TaskWorker.Listing.BLOCKED, "blocked")

    @admin.action(description="Put the selected workers on their task's allow list")
    def allow(self, request, queryset):
        _set_listing(self, request, queryset, TaskWorker.Listing.ALLOWED, "allowed")

    @admin.action(description="Remove the selected workers from the block and allow lists")
    def remove_from_lists(self, request, queryset):
        _set_listing(self, request, queryset, TaskWorker.Listing.NONE, "removed from the lists")

    @admin.action(description="Release the selected workers' holds for review")
    def release_hold(self, request, queryset):
        """Lift the selected held workers' holds, one ``qualification.release_hold`` each (it writes the
        audit log's entry, actor the request's user), all or none."""
        with transaction.atomic():
            held = queryset.filter(held_at__isnull=False).select_related("task", "user")
            n = sum(qualification.release_hold(task=w.task, user=w.user) for w in held)
        self.message_user(request, f"Released {n} hold(s).", messages.SUCCESS)


@admin.register(Task)
class TaskAdmin(TaskOwnedAdmin):
    """Tasks: config (validated on save), owners, current round."""

    task_path = ""
    form = TaskAdminForm
    list_display = ["name", "slug", "current_round", "is_active", "validation_quorum", "created_at"]
    list_select_related = ["current_round__task"]
    list_filter = ["is_active"]
    search_fields = ["name", "slug"]
    # A search box (accounts.admin: staff accounts by username) instead of a list of every account.
    autocomplete_fields = ["owners"]

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "owners":
            kwargs["widget"] = OwnerPickerWidget(db_field, self.admin_site, using=kwargs.get("using"))
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    # The current round changes only through the services (``tasks.services.set_current_round``: the
    # Round admin's "Make current" action, or "Start the next round"), which end the replaced round's
    # studies; a form field would switch it behind their back.
    readonly_fields = ["current_round", "created_at"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [RoundInline, TutorialItemInline]


def _percent(value: float | None) -> str:
    """A rate in [0, 1] as a percentage with one decimal (``"33.3%"``); ``"not measured"`` for None."""
    return "not measured" if value is None else f"{value:.1%}"


@admin.register(Round)
class RoundAdmin(TaskOwnedAdmin):
    """Rounds with their example counts and MER (computed, read-only)."""

    owners_can_add = True
    list_display = [
        "__str__",
        "task",
        "number",
        "is_closed",
        "collected",
        "model_fooling",
        "mer",
        "verified",
        "vmer",
        "awaiting_verdict",
        "started_at",
    ]
    actions = ["close_rounds", "make_current"]
    list_select_related = ["task"]
    list_filter = ["is_closed", ("task", admin.RelatedOnlyFieldListFilter)]
    readonly_fields = [
        "collected",
        "model_fooling",
        "mer",
        "verified",
        "vmer",
        "awaiting_verdict",
        "started_at",
        "closed_at",
    ]
    fields = [
        "task",
        "number",
        "description",
        "is_closed",
        "is_competition",
        "examples_per_participant",
        "metadata",
        *readonly_fields,
    ]

    def get_queryset(self, request):
        return with_round_counts(super().get_queryset(request))

    def get_readonly_fields(self, request, obj=None):
        # A round is opened by the services (a new round is open) and closed only by them (the action
        # below, or "Start the next round"), which end its studies: never by a checkbox. Once made, its
        # task and number are what its examples, contexts and studies were collected under.
        fixed = ["task", "number"] if obj is not None else []
        return [*fixed, "is_closed", *self.readonly_fields]

    @admin.display(description="Collected", ordering="n_collected")
    def collected(self, obj) -> int:
        return getattr(obj, "n_collected", 0)

    @admin.display(description="Model-fooling", ordering="n_fooling")
    def model_fooling(self, obj) -> int:
        return getattr(obj, "n_fooling", 0)

    @admin.display(description="MER")
    def mer(self, obj) -> str:
        return _percent(rate(getattr(obj, "n_fooling", 0), getattr(obj, "n_scored", 0)))

    @admin.display(description="Verified model-fooling", ordering="n_verified")
    def verified(self, obj) -> int:
        return getattr(obj, "n_verified", 0)

    @admin.display(description="vMER")
    def vmer(self, obj) -> str:
        return _percent(rate(getattr(obj, "n_verified", 0), getattr(obj, "n_scored", 0)))

    @admin.display(description="Awaiting a model verdict", ordering="n_unscored")
    def awaiting_verdict(self, obj) -> int:
        return getattr(obj, "n_unscored", 0)

    @admin.action(description="Make the selected round its task's current round (it takes the examples)")
    def make_current(self, request, queryset):
        """Make the one selected round its task's current round (``services.set_current_round``; the round
        it replaces stops collecting and its studies end)."""
        rounds = [r for r in queryset.select_related("task") if self.has_change_permission(request, r)]
        if len(rounds) != 1:
            self.message_user(request, "Select exactly one round of a task you own.", messages.ERROR)
            return
        [round_] = rounds
        try:
            services.set_current_round(task=round_.task, round_=round_)
        except services.TaskError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        self.message_user(request, f"{round_} is now the current round of {round_.task}.", messages.SUCCESS)

    @admin.action(description="Close the selected rounds (they accept no more examples)")
    def close_rounds(self, request, queryset):
        """Close each selected round the user may change; a closed current round stops collection."""
        closed = []
        for round_ in queryset.select_related("task"):
            if not self.has_change_permission(request, round_):
                continue
            if not round_.is_closed:
                services.close_round(round_=round_)
                closed.append(round_)
        if closed:
            names = ", ".join(str(r) for r in closed)
            self.message_user(request, f"Closed {len(closed)} round(s): {names}.", messages.SUCCESS)
            current = [r for r in closed if r.task.current_round_id == r.pk]
            for r in current:
                self.message_user(
                    request,
                    f"{r} was the current round: {r.task} collects no examples until you start the next "
                    "round.",
                    messages.WARNING,
                )
        else:
            self.message_user(request, "No open round was selected.", messages.INFO)


@admin.register(Context)
class ContextAdmin(TaskOwnedAdmin):
    """Contexts of a task's rounds."""

    owners_can_add = True
    list_display = ["id", "task", "round", "tag", "external_id", "created_at"]
    list_select_related = ["task", "round__task"]
    list_filter = [
        ("task", admin.RelatedOnlyFieldListFilter),
        ("round", admin.RelatedOnlyFieldListFilter),
        "tag",
    ]
    search_fields = ["tag", "external_id", "data"]
    readonly_fields = ["created_at"]


# The audit log (core/audit.py), read-only: superusers see every entry, a task owner those of the
# tasks they own; each Task page links to its task's entries.
admin.site.unregister(audit.LogEntry)


@admin.register(audit.LogEntry)
class LogEntryAdmin(audit.TaskScopedLogEntryAdmin):
    def has_module_permission(self, request):
        """Listed in the index and sidebar for superusers only; owners open it from their task's page."""
        return request.user.is_active and request.user.is_superuser

    def owned_task_ids(self, request) -> set[int]:
        return _owned_task_ids(request)

    def task_choices(self, request) -> list[tuple[int, str]]:
        tasks = (
            Task.objects.all()
            if self._sees_all(request)
            else Task.objects.filter(pk__in=_owned_task_ids(request))
        )
        return [(task.pk, task.slug) for task in tasks.order_by("slug")]


extend_admin(Task, urls=[audit.task_log_urls], object_tools=[ObjectTool("Audit log", "audit_log")])
