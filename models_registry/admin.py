"""Admin for registered models and round targets (task owners see their tasks' rows).

Two actions close the loop from a model's row: make the selected model(s) the target of the task's
current round, or start the task's next round with them as its target (after a confirmation page;
``round_targets.start_next_round`` opens it and closes the current round). It also adds the Task
admin's "Start the next round" page (``start_round_view``), an extension of ``tasks.admin.TaskAdmin``.

"Register a model" (``upload/``) takes a zip of a ``save_pretrained`` directory, a hub id or an endpoint
URL with the model card, creates the model and queues its check; the change page shows the status and
a failure's message at the top. "Check again" re-queues the check of the selected models (not of a
refused upload: it has no files, and its reason is kept). A new model is unpublished; "Publish" and
"Unpublish" set the flag of the selected models (or tick "is published" on the change page). "Serve the
selected model(s) on …" pins the runtime a model is served and evaluated on (``services.set_runtime``,
docs/onnx.md).
"""

from __future__ import annotations

import json
from functools import partial

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from core.admin_extensions import ObjectTool, extend_admin
from engine.runtime.runtimes import ONNX_FP32, ONNX_INT8, TORCH, label
from models_registry.forms import RegisterModelForm, StartRoundForm
from models_registry.generative import (
    clean_generation_settings,
    register_chat_endpoint_model,
    register_local_chat_model,
)
from models_registry.jobs import check_model
from models_registry.models import RegisteredModel, RoundTarget
from models_registry.round_targets import set_round_targets, start_next_round
from models_registry.runtime_facts import REMOTE_LABELS, runtime_label
from models_registry.services import (
    ModelRegistryError,
    check_again,
    register_endpoint_model,
    register_hub_model,
    register_uploaded_model,
    set_runtime,
)
from tasks.admin import TaskOwnedAdmin
from tasks.context_files import ContextFileError
from tasks.models import Round, Task
from tasks.selectors import next_round_number
from tasks.services import TaskError


class RoundTargetInline(admin.TabularInline):
    model = RoundTarget
    extra = 0
    fields = ["round", "position"]
    raw_id_fields = ["round"]


class ServedByFilter(admin.SimpleListFilter):
    """ "By runtime": the runtimes this server runs a model on, and the remote kinds apart (a remote model's
    runtime field holds a default that nothing here runs)."""

    title = "runtime"
    parameter_name = "served_by"

    def lookups(self, request, model_admin):
        return [(TORCH, label(TORCH)), (ONNX_FP32, label(ONNX_FP32)), (ONNX_INT8, label(ONNX_INT8))] + [
            (str(source), words) for source, words in REMOTE_LABELS.items()
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value in REMOTE_LABELS:
            return queryset.filter(source=value)
        if value in (TORCH, ONNX_FP32, ONNX_INT8):
            return queryset.filter(runtime=value).exclude(source__in=list(REMOTE_LABELS))
        return queryset


class RegisteredModelAdminForm(forms.ModelForm):
    """The change form; a generative model's settings (``generation``) are checked as at registration
    (``generative.clean_generation_settings``: prices numbers, finite and not negative, ...)."""

    class Meta:
        model = RegisteredModel
        fields = ["generation"]  # the admin's own field list applies; this form adds the check

    def clean_generation(self):
        value = self.cleaned_data.get("generation")
        if not value:  # a classifier's: nothing to check
            return value
        if not isinstance(value, dict):
            raise forms.ValidationError("The generation settings are a JSON object of settings.")
        try:
            return clean_generation_settings(value)
        except ModelRegistryError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(RegisteredModel)
class RegisteredModelAdmin(TaskOwnedAdmin):
    """Models with their status, size and dev accuracy (from the card); the card is shown read-only."""

    form = RegisteredModelAdminForm

    list_display = [
        "name",
        "task",
        "status_shown",
        "runtime_shown",
        "parameter_count",
        "dev_accuracy",
        "backbone",
        "owner",
        "updated_at",
    ]
    list_select_related = ["task", "owner"]
    list_filter = [
        ("task", admin.RelatedOnlyFieldListFilter),
        "status",
        ServedByFilter,
        "source",
        "is_published",
    ]
    search_fields = ["name", "backbone", "path", "error_message"]
    readonly_fields = [
        "runtime_shown",
        "parameter_count",
        "card_pretty",
        "status",
        "recheck",
        "error_message",
        "created_at",
        "updated_at",
    ]
    exclude = ["card", "endpoint_secret"]
    raw_id_fields = ["owner"]
    inlines = [RoundTargetInline]
    actions = [
        "make_target_of_current_round",
        "start_next_round_with_models",
        "check_again",
        "serve_on_torch",
        "serve_on_onnx_fp32",
        "serve_on_onnx_int8",
        "publish",
        "unpublish",
    ]
    change_form_template = "models_registry/admin/change_form.html"
    change_list_template = "models_registry/admin/change_list.html"

    #: Where the weights come from (and whether pickles may load): decided at registration and vouched
    #: for by the model's check. Another folder or endpoint is another model: register it again.
    ORIGIN_FIELDS = ["source", "path", "endpoint_url", "allow_pickle"]

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), *self.ORIGIN_FIELDS]

    def has_add_permission(self, request):
        # Models come in through "Register a model" (register_view), which checks them; Django's plain
        # add form stored any folder, with pickles allowed, unchecked.
        return False

    def get_urls(self):
        view = self.admin_site.admin_view(self.register_view)
        name = f"{self.opts.app_label}_{self.opts.model_name}_register"
        return [path("upload/", view, name=name), *super().get_urls()]

    def _registrable_tasks(self, request):
        """Tasks the user may register models for: all for superusers, else the ones they own."""
        if request.user.is_superuser:
            return Task.objects.order_by("name")
        return Task.objects.filter(owners=request.user).order_by("name")

    def register_view(self, request):
        """Register a model (zip, hub id or endpoint) with its card; the check runs as a job."""
        tasks = self._registrable_tasks(request)
        if not tasks.exists():
            raise PermissionDenied
        if request.method == "POST":
            form = RegisterModelForm(request.POST, request.FILES, tasks=tasks)
            if form.is_valid():
                try:
                    model = self._register(request, form)
                except ModelRegistryError as exc:
                    form.add_error(None, str(exc))
                else:
                    self.log_addition(request, model, [{"added": {}}])
                    return redirect("admin:models_registry_registeredmodel_change", model.pk)
        else:
            form = RegisterModelForm(tasks=tasks)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "form": form,
            "title": "Register a model",
            "max_upload_bytes": settings.DYNABENCH_MODEL_UPLOAD_MAX_BYTES,
        }
        return TemplateResponse(request, "models_registry/admin/register.html", context)

    def _register(self, request, form: RegisterModelForm) -> RegisteredModel:
        data = form.cleaned_data
        common = {"task": data["task"], "name": data["name"], "owner": request.user, "card": form.card()}
        source = data["source"]
        if source == RegisteredModel.Source.ENDPOINT:
            model, secret = register_endpoint_model(url=data["endpoint_url"], **common)
            self.message_user(
                request,
                format_html(
                    "Signing secret of {}: <code>{}</code>. It is shown only now: copy it to your endpoint, "
                    "which must check the X-Dynabench-Signature header of each request.",
                    model.name,
                    secret,
                ),
                messages.WARNING,
            )
        elif source == RegisteredModel.Source.CHAT_ENDPOINT:
            model = register_chat_endpoint_model(
                base_url=data["chat_base_url"],
                chat_model_name=data["chat_model_name"],
                api_key_env=data["api_key_env"].strip(),
                api_key_file=data["api_key_file"].strip(),
                settings=form.generation_settings(),
                **common,
            )
            # One short probe, here and now: a wrong key or URL is told on this page ("401
            # unauthorized"), not later on the model's page. Bounded by the model's timeout.
            check_model(model.pk)
        elif source == RegisteredModel.Source.LOCAL_DIR:
            model = register_local_chat_model(
                path=data["local_path"].strip(), settings=form.generation_settings(), **common
            )
        elif source == RegisteredModel.Source.HUB:
            model = register_hub_model(hub_id=data["hub_id"], allow_pickle=data["allow_pickle"], **common)
        else:
            model = register_uploaded_model(
                fileobj=data["zip_file"], allow_pickle=data["allow_pickle"], **common
            )
        model.refresh_from_db()
        self._report_status(request, model)
        return model

    def _report_status(self, request, model: RegisteredModel) -> None:
        if model.status == RegisteredModel.Status.FAILED:
            self.message_user(request, f"{model.name} failed: {model.error_message}", messages.ERROR)
        elif model.status == RegisteredModel.Status.READY:
            self.message_user(request, f"{model.name} is registered and ready.", messages.SUCCESS)
        else:
            self.message_user(request, f"{model.name} is registered; its check is queued ({model.status}).")
        if not model.is_published:
            self.message_user(
                request,
                f"{model.name} is unpublished: only you and the task's owners see it. Publish it (action "
                '"Publish" or the "is published" box) when it is ready.',
                messages.INFO,
            )

    # Short: the action menu is as wide as its longest label (with the check's steps it ran under the
    # filter panel). What the check does is on the change page and in docs/onnx.md.
    @admin.action(description="Check the selected model(s) again")
    def check_again(self, request, queryset):
        """Queue the check job again (download, load, probe, export to ONNX, choose the int8 plan), e.g.
        after a failed hub download or a fixed endpoint.

        A model being checked, or an upload without files (refused), is left as it is, with a message.
        """
        models = [m for m in queryset.select_related("task") if m.task.is_owner(request.user)]
        queued, refused = [], []
        for model in models:
            try:
                check_again(model)
            except ModelRegistryError as exc:
                refused.append(str(exc))
            else:
                queued.append(model.name)
        if queued:
            self.message_user(request, f"Check queued for {len(queued)} model(s): {', '.join(queued)}.")
        for message in refused:
            self.message_user(request, f"Not checked again: {message}.", messages.WARNING)
        if len(models) < queryset.count():
            self.message_user(request, "Only the task's owners can re-check its models.", messages.ERROR)

    def _serve_on(self, request, queryset, runtime: str) -> None:
        """Pin ``runtime`` on the selected models of tasks the user owns (``services.set_runtime``)."""
        models = [m for m in queryset.select_related("task") if m.task.is_owner(request.user)]
        pinned, kept, refused = [], [], []
        for model in models:
            before = model.runtime
            try:
                set_runtime(model, runtime)
            except ModelRegistryError as exc:
                refused.append(str(exc))
            else:
                (kept if before == runtime else pinned).append(f"{model.name} ({model.task.name})")
        if pinned:
            self.message_user(
                request,
                f"Now served on {label(runtime)}: {', '.join(pinned)}. Scores measured on another runtime "
                "are queued again.",
            )
        if kept:
            self.message_user(
                request,
                f"Pinned to {label(runtime)}, which they were already served on (no Score to measure again): "
                f"{', '.join(kept)}.",
            )
        for message in refused:
            self.message_user(request, f"Not changed: {message}.", messages.WARNING)
        if len(models) < queryset.count():
            self.message_user(
                request, "Only the task's owners can choose its models' runtime.", messages.ERROR
            )

    @admin.action(description="Serve the selected model(s) on PyTorch (pin the runtime)")
    def serve_on_torch(self, request, queryset):
        self._serve_on(request, queryset, TORCH)

    @admin.action(description="Serve the selected model(s) on ONNX Runtime, fp32 (pin the runtime)")
    def serve_on_onnx_fp32(self, request, queryset):
        self._serve_on(request, queryset, ONNX_FP32)

    @admin.action(description="Serve the selected model(s) on ONNX Runtime, int8 weights (pin the runtime)")
    def serve_on_onnx_int8(self, request, queryset):
        self._serve_on(request, queryset, ONNX_INT8)

    def _set_published(self, request, queryset, published: bool) -> None:
        """Set ``is_published`` on the selected models the user may change (owner, task owner, superuser)."""
        allowed = [m for m in queryset.select_related("task") if self.has_change_permission(request, m)]
        changed = 0
        for model in allowed:
            # One save per model, not a queryset update: the audit log records each change (core/audit.py).
            if model.is_published != published:
                model.is_published = published
                model.save(update_fields=["is_published", "updated_at"])
            changed += 1
        verb = "Published" if published else "Unpublished"
        self.message_user(request, f"{verb} {changed} model(s).")
        if len(allowed) < queryset.count():
            self.message_user(request, "Only the task's owners can change its models.", messages.ERROR)

    @admin.action(description="Publish the selected model(s) (visible to everyone)")
    def publish(self, request, queryset):
        self._set_published(request, queryset, True)

    @admin.action(description="Unpublish the selected model(s) (visible to owners only)")
    def unpublish(self, request, queryset):
        self._set_published(request, queryset, False)

    def _models_of_one_task(self, request, queryset) -> list[RegisteredModel] | None:
        """The selected models, if they belong to one task the user owns (else a message and None)."""
        models = list(queryset.select_related("task__current_round").order_by("name"))
        if len({m.task_id for m in models}) != 1:
            self.message_user(request, "Select models of one task.", messages.ERROR)
            return None
        if not models[0].task.is_owner(request.user):
            self.message_user(request, "Only the task's owners can choose its targets.", messages.ERROR)
            return None
        return models

    @admin.action(description="Make the selected model(s) the target of the task's current round")
    def make_target_of_current_round(self, request, queryset):
        """Several models become an ensemble (in name order); the round's previous targets are replaced."""
        models = self._models_of_one_task(request, queryset)
        if models is None:
            return
        task = models[0].task
        round_ = task.current_round
        if round_ is None:
            self.message_user(request, f"{task.name} has no current round.", messages.ERROR)
            return
        try:
            set_round_targets(round=round_, models=models)
        except ModelRegistryError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        names = ", ".join(m.name for m in models)
        self.message_user(request, f"{names}: now the target of {task.name} round {round_.number}.")

    @admin.action(description="Start the task's next round with the selected model(s) as its target")
    def start_next_round_with_models(self, request, queryset):
        """Confirmation page (with a description), then ``round_targets.start_next_round``."""
        models = self._models_of_one_task(request, queryset)
        if models is None:
            return None
        task = models[0].task
        if "apply" in request.POST:
            form = StartRoundWithModelsForm(request.POST)
            if form.is_valid():
                try:
                    round_, _ = start_next_round(
                        task=task, description=form.cleaned_data["description"], models=models
                    )
                except TaskError as exc:
                    self.message_user(request, f"Nothing was changed: {exc}", messages.ERROR)
                    return None
                names = ", ".join(m.name for m in models)
                self.message_user(
                    request,
                    f"Round {round_.number} of {task.name} started and is now the current round "
                    f"(targets: {names}).",
                )
                return None
        else:
            form = StartRoundWithModelsForm()
        last = Round.objects.filter(task=task).order_by("-number").values_list("number", flat=True).first()
        task_admin = self.admin_site.get_model_admin(Task)
        context = {
            **candidates_context(request, task_admin, task, models),
            **self.admin_site.each_context(request),
            "title": f"Start round {(last or 0) + 1} of {task.name}",
            "task": task,
            "models": models,
            "form": form,
            "opts": self.opts,
            "action_name": "start_next_round_with_models",
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "models_registry/admin/start_next_round.html", context)

    @admin.display(description="Runtime", ordering="runtime")
    def runtime_shown(self, obj: RegisteredModel) -> str:
        """What serves the model: "remote chat server" or "remote endpoint" for a remote model, never
        the runtime field's default (``runtime_facts.runtime_label``)."""
        return runtime_label(obj)

    @admin.display(description="Status", ordering="status")
    def status_shown(self, obj: RegisteredModel) -> str:
        """The status, and for a ready model checked again that it still serves meanwhile."""
        if obj.recheck:
            return f"{obj.get_status_display()} ({obj.get_recheck_display().lower()}, still serving)"
        return obj.get_status_display()

    @admin.display(description="Dev accuracy")
    def dev_accuracy(self, obj: RegisteredModel) -> str:
        value = (obj.card or {}).get("dev_accuracy")
        return f"{value:.1%}" if isinstance(value, int | float) else "–"

    @admin.display(description="Model card")
    def card_pretty(self, obj: RegisteredModel) -> str:
        text = json.dumps(obj.card or {}, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)


class StartRoundWithModelsForm(forms.Form):
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80, "dir": "auto"}),
        help_text="Shown with the round on the task page.",
    )


@admin.register(RoundTarget)
class RoundTargetAdmin(TaskOwnedAdmin):
    """Which models are each round's targets, in ensemble order."""

    task_path = "round__task"
    list_display = ["round", "model", "position", "model_status"]
    list_select_related = ["round__task", "model"]
    list_filter = [("round__task", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["model__name"]
    raw_id_fields = ["model", "round"]

    @admin.display(description="Model status", ordering="model__status")
    def model_status(self, obj: RoundTarget) -> str:
        return obj.model.get_status_display()


# --- The Task admin's "Start the next round" (an extension of tasks.admin.TaskAdmin) ---------------


@admin.action(description="Start the next round of the selected task")
def start_next_round_action(modeladmin, request, queryset):
    tasks = list(queryset[:2])
    if len(tasks) != 1:
        modeladmin.message_user(request, "Select exactly one task to start its next round.", messages.ERROR)
        return None
    return redirect("admin:tasks_task_start_round", tasks[0].pk)


def start_round_view(model_admin, request, object_id):
    """Start the next round: description, target model(s), an optional contexts file (admin form)."""
    task = model_admin.get_object(request, unquote(object_id))
    if task is None:
        raise Http404("No such task.")
    if not model_admin.has_change_permission(request, task):
        raise PermissionDenied
    previous = task.current_round
    if request.method == "POST":
        form = StartRoundForm(task, request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["contexts_file"]
            try:
                round_, report = start_next_round(
                    task=task,
                    description=form.cleaned_data["description"],
                    models=list(form.cleaned_data["models"]),
                    contexts_file=upload,
                    contexts_format=getattr(form, "contexts_format", None),
                    expected_number=form.cleaned_data["round_number"],
                )
            except (TaskError, ContextFileError) as exc:
                form.add_error(None, f"Nothing was changed: {exc}")
            else:
                _report_started(model_admin, request, task, round_, previous, report, upload)
                return redirect("admin:tasks_task_change", task.pk)
    else:
        form = StartRoundForm(task)
    next_number = next_round_number(task)
    candidates = list(form.fields["models"].queryset)
    checkboxes = {int(str(box.data["value"])): box for box in form["models"]}
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "original": task,
        "task": task,
        "form": form,
        "previous": previous,
        "next_number": next_number,
        "title": f"Start round {next_number} of {task}",
        "change_url": reverse("admin:tasks_task_change", args=[task.pk]),
        **candidates_context(request, model_admin, task, candidates, checkboxes),
    }
    return TemplateResponse(request, "models_registry/admin/start_round.html", context)


def candidates_context(
    request, task_admin, task: Task, models: list[RegisteredModel], checkboxes=None
) -> dict:
    """The candidate targets of a start-round page, and the warning about the round it closes.

    Returns ``candidates`` (one dict per model, in the order given: ``model``, ``checkbox`` (its bound
    checkbox in the form, or None), ``is_current`` (a target of the current round), ``facts`` (scores and
    training rounds, ``cycle.training.owner_facts.CandidateFacts``, or None when no app provides them)),
    ``closing`` (the open current round the start closes, or None), ``waiting_in_closing_round``
    (its examples still waiting for validation; 0 when unknown), and ``live_studies`` and
    ``live_studies_next_round`` (the crowd studies the start ends, each a dict with ``study``, ``url``,
    ``platform``, ``active``, and the number of the round started; ``[]`` when none). The scores,
    training rounds, waiting count and studies come from the apps above
    (``ExtensibleAdmin.extension_context``, page ``"start_round"``); the current targets are this app's
    ``RoundTarget`` rows (one query).
    """
    current = task.current_round
    closing = current if current is not None and not current.is_closed else None
    current_ids = (
        set(RoundTarget.objects.filter(round_id=current.pk).values_list("model_id", flat=True))
        if current is not None
        else set()
    )
    extra = task_admin.extension_context("start_round", request, task, models=models, closing_round=closing)
    facts = extra.get("candidate_facts", {})
    candidates = [
        {
            "model": model,
            "checkbox": (checkboxes or {}).get(model.pk),
            "is_current": model.pk in current_ids,
            "facts": facts.get(model.pk),
        }
        for model in models
    ]
    return {
        "candidates": candidates,
        "closing": closing,
        "waiting_in_closing_round": extra.get("waiting_in_closing_round", 0),
        "live_studies": extra.get("live_studies", []),
        "live_studies_next_round": extra.get("live_studies_next_round"),
        "perf_metric": task.cfg.perf_metric.replace("_", " "),
    }


def _report_started(model_admin, request, task, round_, previous, report, upload) -> None:
    targets = ", ".join(round_.targets.order_by("position", "id").values_list("model__name", flat=True))
    text = f"Round {round_.number} started and is now the current round (targets: {targets})."
    if previous is not None:
        text += f" Round {previous.number} is closed."
    model_admin.message_user(request, text, messages.SUCCESS)
    model_admin.log_change(request, task, [{"changed": {"fields": ["current_round"]}}])
    if upload is not None:
        level = messages.WARNING if report.skipped else messages.INFO
        model_admin.message_user(request, f"{upload.name}: {report.summary()}", level)
        for line in report.skipped_lines():
            model_admin.message_user(request, f"{upload.name}, skipped {line}", messages.WARNING)


def _start_round_urls(model_admin) -> list:
    view = model_admin.admin_site.admin_view(partial(start_round_view, model_admin))
    return [path("<path:object_id>/start-round/", view, name="tasks_task_start_round")]


extend_admin(
    Task,
    actions=[start_next_round_action],
    urls=[_start_round_urls],
    object_tools=[ObjectTool("Start the next round", "start_round")],
)
