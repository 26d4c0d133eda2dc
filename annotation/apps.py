from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from core.job_queue import register_schedule

        from .jobs import RETRY_SCHEDULE

        # The recurring job (created by ``manage.py ensure_schedules`` and ``setup_demo``): every 2 minutes,
        # score again the examples whose target model failed or timed out when they were written.
        register_schedule(RETRY_SCHEDULE, "annotation.jobs.retry_failed_predictions_job", minutes=2)

        # The task page (tasks, below) shows a red-teaming round's budget through its section registry.
        from tasks import page_sections

        from .red_team.budget import task_page_section

        page_sections.register(task_page_section)

        # An assistant's model is checked against the registry where a task config is saved.
        from tasks import config_checks

        from .assistant.checks import assistant_models

        config_checks.register(assistant_models)

        # Side by side: no more models than the open round has ready targets.
        from .red_team.side_by_side import side_by_side_targets

        config_checks.register(side_by_side_targets)

        # The task page shows its owners the assistant study's arms.
        from .assistant.selectors import task_page_section as assistant_section

        page_sections.register(assistant_section)
