"""Admin of the round-to-round loop: training jobs and the Task admin's "Train the next round's target",
the start-round pages' facts on candidates, the Task admin's "Dashboard" tool and the admin index's
list of dashboards, round releases and the Round admin's actions "Release" and
"Run the artefact probes now" (``core.admin_extensions.extend_admin`` adds them to the lower apps' admins)."""

from __future__ import annotations

from functools import partial

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from core.admin_extensions import ObjectTool, extend_admin
from cycle.kinds import rules_for
from cycle.training.natural import MAX_NATURAL_SHARE, natural_datasets
from cycle.training.planning import (
    BACKBONE_CHOICES,
    RECIPES,
    TargetTrainingError,
    check_model_name_syntax,
    default_model_name,
)
from cycle.training.requests import check_training_name, request_training
from leaderboards.selectors import auto_eval_datasets, card_eval_datasets
from tasks.admin import TaskOwnedAdmin, only_one_owned_task
from tasks.models import Round, Task

from .models import Release, TrainingJob
from .probes.admin import run_artefact_probes
from .releases.services import ReleaseError, create_release, release_dir
from .training.owner_facts import candidate_facts, training_data_by_round, waiting_for_validation

#: The name help text, without angle brackets: the admin renders model help texts as HTML.
NAME_HELP = (
    "Registered model name; blank: {backbone}-{recipe}-r{rounds}[-nat{share}], e.g. minilm-quick-r1-2 or "
    "mpnet-finetune-r1-2-nat25."
)
BACKBONE_LABELS = {
    "minilm": "MiniLM-L6 (all-MiniLM-L6-v2, 384 dimensions, 22.7M parameters): the default",
    "mpnet": "MPNet-base (all-mpnet-base-v2, 768 dimensions, 109M parameters): stronger, about five times "
    "slower; needs 'make mpnet' on the workers; single-text tasks only",
}


# --- The adversarial loop: training jobs, "train the next round's target", exports -------------------


class TrainingJobAdminForm(forms.ModelForm):
    """Only overrides help texts that the admin would otherwise render as HTML (``<recipe>`` vanished)."""

    class Meta:
        model = TrainingJob
        fields = ["name"]  # the admin's own field list (all read-only) applies
        help_texts = {"name": NAME_HELP}


@admin.register(TrainingJob)
class TrainingJobAdmin(TaskOwnedAdmin):
    """Training jobs with their progress and failure message; written by the job only, so read-only."""

    form = TrainingJobAdminForm

    list_display = [
        "id",
        "task",
        "rounds_text",
        "recipe",
        "status",
        "progress",
        "model",
        "dev_accuracy",
        "requested_by",
        "created_at",
        "finished_at",
    ]
    list_select_related = ["task", "model", "requested_by"]
    list_filter = ["status", "recipe", ("task", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["name", "progress", "error_message", "model__name"]
    readonly_fields = [
        "task",
        "rounds",
        "recipe",
        "name",
        "target_round",
        "seed",
        "epochs",
        "backbone",
        "backbone_path",
        "natural_dataset",
        "natural_share",
        "status",
        "progress",
        "log_pretty",
        "error_pretty",
        "model",
        "dev_accuracy",
        "requested_by",
        "created_at",
        "started_at",
        "finished_at",
    ]
    fields = readonly_fields
    actions = ["run_again"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="Rounds")
    def rounds_text(self, obj: TrainingJob) -> str:
        return ", ".join(str(n) for n in obj.rounds or [])

    @admin.display(description="Progress log")
    def log_pretty(self, obj: TrainingJob) -> str:
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', obj.log or "–")

    @admin.display(description="Error message")
    def error_pretty(self, obj: TrainingJob) -> str:
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', obj.error_message or "–")

    @admin.action(description="Run the selected finished or failed jobs again (as new jobs)")
    def run_again(self, request, queryset):
        """Queue a new job with the same settings for each selected done or failed job of an owned task.

        A job whose model name is taken by now (a done job's model, usually) is refused with the reason.
        """
        queued = 0
        refused = []
        finished = (TrainingJob.Status.DONE, TrainingJob.Status.FAILED)
        for job in queryset.select_related("task").filter(status__in=finished).order_by("pk"):
            if not job.task.is_owner(request.user):
                continue
            try:
                with transaction.atomic():
                    request_training(
                        task=job.task,
                        rounds=job.rounds,
                        recipe=job.recipe,
                        name=job.name,
                        target_round=job.target_round,
                        seed=job.seed,
                        epochs=job.epochs,
                        backbone=job.backbone,
                        backbone_path=job.backbone_path,
                        natural_dataset=job.natural_dataset,
                        natural_share=job.natural_share,
                        requested_by=request.user,
                    )
            except TargetTrainingError as exc:
                refused.append(f"#{job.pk}: {exc}")
                continue
            queued += 1
        self.message_user(request, f"{queued} training job(s) queued.")
        if refused:
            self.message_user(request, "Not queued: " + "; ".join(refused), level=messages.ERROR)


class TrainNextTargetForm(forms.Form):
    """The intermediate page of "Train the next round's target": rounds, recipe, name, promotion."""

    PROMOTE_NONE = "none"
    PROMOTE_CURRENT = "current"

    rounds = forms.TypedMultipleChoiceField(
        coerce=int,
        widget=forms.CheckboxSelectMultiple,
        help_text="Their settled (validated correct) examples and imported training data train the model.",
    )
    recipe = forms.ChoiceField(choices=[(r, r) for r in RECIPES], initial="quick")
    backbone = forms.ChoiceField(
        choices=[(b, BACKBONE_LABELS[b]) for b in BACKBONE_CHOICES],
        initial="minilm",
        required=False,  # a form posted without it (a script, an older page) trains the default
        widget=forms.RadioSelect,
    )
    natural_dataset = forms.ChoiceField(
        required=False,
        label="Natural data",
        help_text="Non-adversarial texts mixed into the training set (manage.py import_natural_data); "
        "the model card records them.",
    )
    natural_share = forms.FloatField(
        required=False,
        min_value=0.0,
        max_value=MAX_NATURAL_SHARE,
        label="Natural share",
        help_text=f"With a natural dataset: the share of the training set made of its texts, above 0 and at "
        f"most {MAX_NATURAL_SHARE} (e.g. 0.25). Leave it blank without one.",
    )
    name = forms.CharField(required=False, max_length=200, help_text=NAME_HELP)
    promote = forms.ChoiceField(widget=forms.RadioSelect, initial=PROMOTE_NONE, label="When trained")

    def __init__(self, task: Task, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.task = task
        numbers = list(Round.objects.filter(task=task).order_by("number").values_list("number", flat=True))
        self.fields["rounds"].choices = [(n, f"Round {n}") for n in numbers]
        self.fields["rounds"].initial = numbers
        self.fields["natural_dataset"].choices = [("", "None")] + [
            (d.slug, f"{d.name} ({d.items.count():,} texts)") for d in natural_datasets(task)
        ]
        choices = [
            (
                self.PROMOTE_NONE,
                "Only register it; then start the next round with it (Models: 'Start the task's next "
                "round with the selected model(s)', or Tasks: 'Start the next round')",
            )
        ]
        if task.current_round_id:
            choices.append(
                (self.PROMOTE_CURRENT, f"Make it the target of the current round {task.current_round.number}")
            )
        self.fields["promote"].choices = choices

    def clean_name(self) -> str:
        """A valid model name, or blank for the default one."""
        name = self.cleaned_data["name"].strip()
        if name:
            try:
                check_model_name_syntax(name)
            except TargetTrainingError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return name

    def clean(self):
        """Refuse a name (typed, or the default one) that a model, a directory or a pending job holds."""
        data = super().clean()
        data["backbone"] = data.get("backbone") or "minilm"
        if data.get("backbone") == "mpnet" and rules_for(self.task.cfg).span_answers:
            self.add_error("backbone", "Extractive QA targets train on the MiniLM backbone only.")
        if data.get("backbone") == "mpnet" and len(self.task.cfg.model_input_fields) > 1:
            self.add_error(
                "backbone", "MPNet takes single texts only; a task with text pairs trains on MiniLM."
            )
        # A share that failed its own checks (not a number, out of range) has said so already.
        share_ok = "natural_share" not in self.errors
        if not data.get("natural_dataset"):
            if share_ok and data.get("natural_share"):
                self.add_error(
                    "natural_share", "Choose the natural dataset this share is of, or leave the share blank."
                )
            data["natural_share"] = 0.0
        elif share_ok and data.get("natural_share") in (None, 0.0):
            self.add_error(
                "natural_share", "Give the share of natural texts (above 0) or choose no natural data."
            )
        if "name" in data and data.get("rounds") and data.get("recipe"):
            name = data["name"] or default_model_name(
                data["rounds"],
                data["recipe"],
                data.get("backbone") or "minilm",
                data.get("natural_share") or 0.0,
            )
            try:
                check_training_name(self.task, name)
            except TargetTrainingError as exc:
                self.add_error("name", str(exc))
        return data


@admin.action(description="Train the next round's target")
def train_next_round_target(modeladmin, request, queryset):
    """Intermediate form (rounds, recipe, name, promote), then a queued ``TrainingJob``."""
    task = only_one_owned_task(modeladmin, request, list(queryset.select_related("current_round")))
    if task is None:
        return None
    if "apply" in request.POST:
        form = TrainNextTargetForm(task, request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                promote = data["promote"] == TrainNextTargetForm.PROMOTE_CURRENT
                target_round = task.current_round.number if promote and task.current_round_id else None
                with transaction.atomic():
                    job = request_training(
                        task=task,
                        rounds=data["rounds"],
                        recipe=data["recipe"],
                        name=data["name"],
                        target_round=target_round,
                        backbone=data["backbone"],
                        natural_dataset=data["natural_dataset"],
                        natural_share=data["natural_share"] or 0.0,
                        requested_by=request.user,
                    )
            except TargetTrainingError as exc:
                modeladmin.message_user(request, str(exc), level=messages.ERROR)
                return None
            job.refresh_from_db()
            url = reverse("admin:cycle_trainingjob_change", args=[job.pk])
            modeladmin.message_user(
                request,
                format_html('Training job <a href="{}">#{}</a>: {}.', url, job.pk, job.get_status_display()),
                level=messages.ERROR if job.status == TrainingJob.Status.FAILED else messages.SUCCESS,
            )
            return None
    else:
        form = TrainNextTargetForm(task)
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": f"Train the next round's target of {task.name}",
        "task": task,
        "form": form,
        "span_task": rules_for(task.cfg).span_answers,
        "card_datasets": [d.name for d in card_eval_datasets(task)],
        "leaderboard_datasets": [d.name for d in auto_eval_datasets(task)],
        "training_data": training_data_by_round(task),
        "labels": task.cfg.labels if rules_for(task.cfg).labelled else [],
        "opts": modeladmin.model._meta,
        "action_name": "train_next_round_target",
        "selected": [task.pk],
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "cycle/admin/train_next_target.html", context)


def start_round_context(request, task: Task, *, models, closing_round) -> dict:
    """What the start-round pages (``models_registry.admin``) show beyond their own data:
    ``candidate_facts`` ({model id: ``CandidateFacts``}: scores, the rounds that trained it) for the
    candidate ``models``, and ``waiting_in_closing_round``, the examples of ``closing_round`` (the round
    the start closes, or None) still waiting for validation. Three queries."""
    return {
        "candidate_facts": candidate_facts(models),
        "waiting_in_closing_round": waiting_for_validation(closing_round),
    }


def dashboard_redirect_view(model_admin, request, object_id):
    """The Task admin's "Dashboard" tool: to ``/tasks/<slug>/dashboard/`` (404 for a task the user cannot
    see in the admin)."""
    task = model_admin.get_object(request, unquote(object_id))
    if task is None or not model_admin.has_view_permission(request, task):
        raise Http404("No such task.")
    return redirect("cycle:dashboard", task.slug)


def _dashboard_urls(model_admin) -> list:
    view = model_admin.admin_site.admin_view(partial(dashboard_redirect_view, model_admin))
    return [path("<path:object_id>/dashboard/", view, name="tasks_task_dashboard")]


extend_admin(
    Task,
    actions=[train_next_round_target],
    urls=[_dashboard_urls],
    object_tools=[ObjectTool("Dashboard", "dashboard")],
    context={"start_round": start_round_context},
)

# The admin index lists the dashboards of the tasks the user owns (cycle/templates/cycle/
# admin/index.html, with the tag of cycle/templatetags/owner_dashboards.py).
admin.site.index_template = "cycle/admin/index.html"


@admin.register(Release)
class ReleaseAdmin(TaskOwnedAdmin):
    """Round releases, read-only: a release is never changed or deleted (``cycle.releases.services``)."""

    list_display = [
        "__str__",
        "task",
        "round",
        "version",
        "total",
        "licence",
        "sha256",
        "created_by",
        "created_at",
    ]
    list_select_related = ["task", "round__task", "created_by"]
    list_filter = [("task", admin.RelatedOnlyFieldListFilter)]
    readonly_fields = [
        "task", "round", "version", "created_by", "created_at", "sha256", "licence", "format_version",
        "counts", "lineage", "path", "folder",
    ]  # fmt: skip

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="Examples")
    def total(self, obj) -> int:
        return (obj.counts or {}).get("total", 0)

    @admin.display(description="Folder on the server")
    def folder(self, obj) -> str:
        return str(release_dir(obj))


@admin.action(description="Release the selected round(s) (freeze their validated examples)")
def release_rounds(modeladmin, request, queryset):
    """``create_release`` for each selected round the user owns; an unchanged round gets its latest release back."""
    for round_ in queryset.select_related("task").order_by("task__slug", "number"):
        if not round_.task.is_owner(request.user):
            modeladmin.message_user(
                request, f"{round_}: only the task's owners can release it.", messages.ERROR
            )
            continue
        try:
            release, created = create_release(round_=round_, user=request.user)
        except ReleaseError as exc:
            modeladmin.message_user(request, f"{round_}: {exc}", messages.WARNING)
            continue
        url = reverse("admin:cycle_release_change", args=[release.pk])
        text = "released as" if created else "is unchanged since"
        modeladmin.message_user(
            request,
            format_html(
                '{} {} <a href="{}">v{}</a> ({} examples).',
                round_,
                text,
                url,
                release.version,
                release.counts.get("total", 0),
            ),
            messages.SUCCESS if created else messages.INFO,
        )


extend_admin(Round, actions=[release_rounds, run_artefact_probes])
