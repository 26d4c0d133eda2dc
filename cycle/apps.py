from django.apps import AppConfig
from django.db.models.signals import post_save


class CycleConfig(AppConfig):
    """The round-to-round loop: training the next round's target, releases, artefact probes, the cycle
    matrix, natural-data sets and the owner's dashboard (docs/architecture.md)."""

    name = "cycle"
    verbose_name = "Round-to-round cycle"

    def ready(self) -> None:
        # Imported here as Django requires: models cannot be imported before the app registry is ready.
        from core import audit
        from tasks import page_sections
        from tasks.models import Round
        from tasks.signals import round_ended

        from .matrix.selectors import task_page_section
        from .models import Release
        from .probes import handlers as probe_handlers

        # A round that stops collecting gets its artefact probes measured (cycle.probes).
        round_ended.connect(probe_handlers.on_round_ended, dispatch_uid="cycle.probes.round_ended")
        post_save.connect(
            probe_handlers.on_round_saved, sender=Round, dispatch_uid="cycle.probes.round_saved"
        )

        # The task page (tasks, below) shows the cycle matrix through its section registry.
        page_sections.register(task_page_section)

        # The recurring job (created by ``manage.py ensure_schedules`` and ``setup_demo``): every minute,
        # training jobs cut off with their worker end failed and forgotten queued ones are queued again.
        from core.job_queue import register_schedule

        from .jobs import SWEEP_SCHEDULE

        register_schedule(SWEEP_SCHEDULE, "cycle.jobs.sweep_training_jobs_job", minutes=1)

        # The audit log (core/audit.py): who released which round version (a release never changes).
        audit.register(
            Release,
            task_of=lambda release: release.task_id,
            include_fields=["task", "round", "version", "sha256", "licence", "path"],
        )
