"""Admin of the artefact probes: the stored results (read-only, the task's owners see their rounds') and
the Round admin's action "Run the artefact probes now" (added by ``cycle/admin.py`` with
``core.admin_extensions.extend_admin``)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from tasks.admin import TaskOwnedAdmin

from ..models import ArtefactProbe
from .services import request_round_probes


@admin.register(ArtefactProbe)
class ArtefactProbeAdmin(TaskOwnedAdmin):
    """A round's probes as the job stored them; a new run replaces them (``services.run_round_probes``)."""

    task_path = "round__task"
    list_display = [
        "__str__",
        "round",
        "kind",
        "status",
        "accuracy",
        "chance",
        "n",
        "n_classes",
        "created_at",
    ]
    list_select_related = ["round__task"]
    list_filter = ["kind", "status"]
    readonly_fields = [
        "round", "kind", "status", "accuracy", "chance", "n", "n_classes", "folds", "details", "error",
        "created_at",
    ]  # fmt: skip

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.action(description="Run the artefact probes of the selected round(s) now")
def run_artefact_probes(modeladmin, request, queryset):
    """Queue ``jobs.run_artefact_probes_job`` for each selected round the user owns (a low-priority job:
    the results replace the round's earlier ones and appear on its page)."""
    for round_ in queryset.select_related("task").order_by("task__slug", "number"):
        if not round_.task.is_owner(request.user):
            modeladmin.message_user(
                request, f"{round_}: only the task's owners can run its probes.", messages.ERROR
            )
            continue
        request_round_probes(round_id=round_.pk)
        url = reverse("cycle:round", args=[round_.task.slug, round_.number])
        modeladmin.message_user(
            request,
            format_html(
                '{}: the artefact probes are queued; the results will be on <a href="{}">its page</a>.',
                round_,
                url,
            ),
            messages.SUCCESS,
        )
