from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    verbose_name = "Tasks"

    def ready(self) -> None:
        # Imported here as Django requires: models cannot be imported before the app registry is ready.
        from core import audit

        from .models import Quiz, QuizQuestion, Round, Task, TaskWorker, TutorialItem

        # The audit log (core/audit.py): task settings, round start and close, lists and holds,
        # tutorial and quiz content. Not: created_at, updated_at, round metadata, onboarding stamps.
        audit.register(
            Task,
            task_of=lambda task: task.pk,
            exclude_fields=["created_at"],
            m2m_fields=["owners"],
        )
        audit.register(
            Round,
            task_of=lambda round_: round_.task_id,
            include_fields=[
                "task",
                "number",
                "description",
                "is_closed",
                "closed_at",
                "is_competition",
                "examples_per_participant",
            ],
        )
        audit.register(
            TaskWorker,
            task_of=lambda worker: worker.task_id,
            include_fields=["task", "user", "listing", "listing_reason", "held_at", "held_reason"],
            # A worker's row appears when they open the tutorial: logged only when it lists or holds them.
            only_if=lambda worker, action: action != audit.CREATE or bool(worker.listing or worker.held_at),
        )
        audit.register(TutorialItem, task_of=lambda item: item.task_id)
        audit.register(Quiz, task_of=lambda quiz: quiz.task_id, exclude_fields=["updated_at"])
        audit.register(QuizQuestion, task_of=lambda question: question.quiz.task_id)
