"""Admin of the arena (imported by generative_bench/admin.py): battles, read-only. A vote is a person's
judgement: nobody edits it, and a battle is never added by hand. A task's owners see its battles
(``tasks.admin.TaskOwnedAdmin``); nothing here holds a secret (an answer's record names no key)."""

from django.contrib import admin

from tasks.admin import TaskOwnedAdmin

from ..models import Battle, LeakMeasurement


@admin.register(Battle)
class BattleAdmin(TaskOwnedAdmin):
    task_path = "task"
    list_display = (
        "id",
        "task",
        "model_a",
        "model_b",
        "status",
        "vote",
        "turn",
        "anonymous",
        "voter",
        "created_at",
        "voted_at",
    )
    list_filter = ("task", "status", "vote", "anonymous")
    list_select_related = ("task", "model_a", "model_b", "voter")
    search_fields = ("voter__username", "model_a__name", "model_b__name")
    date_hierarchy = "created_at"
    readonly_fields = (
        "task",
        "round",
        "source_example",
        "voter",
        "messages",
        "model_a",
        "model_b",
        "answer_a",
        "answer_b",
        "generation_a",
        "generation_b",
        "status",
        "vote",
        "error",
        "client_token",
        "anonymous",
        "identity_leak",
        "regenerated",
        "parent",
        "turn",
        "revealed",
        "created_at",
        "voted_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(LeakMeasurement)
class LeakMeasurementAdmin(TaskOwnedAdmin):
    """The arena's leak-rate measurements, read-only (made by ``manage.py measure_arena_leak`` or the
    ranking page's button)."""

    task_path = "task"
    list_display = ("task", "created_at", "accuracy", "low", "high", "chance", "tested", "n_models")
    list_filter = ("task",)
    readonly_fields = (
        "task",
        "accuracy",
        "low",
        "high",
        "chance",
        "tested",
        "n_models",
        "train_battles",
        "test_battles",
        "top_words",
        "reason",
        "created_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
