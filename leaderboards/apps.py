from django.apps import AppConfig
from django.db.models.signals import post_save


class LeaderboardsConfig(AppConfig):
    name = "leaderboards"
    verbose_name = "Leaderboards"

    def ready(self) -> None:
        # Imported here as Django requires: models cannot be imported before the app registry is ready.
        from core import audit
        from models_registry.models import RegisteredModel

        from . import signals
        from .models import Dataset, Release

        # A model becoming ready, or a new dataset, starts only the evaluations missing.
        post_save.connect(
            signals.model_saved, sender=RegisteredModel, dispatch_uid="leaderboards.model_saved"
        )
        post_save.connect(signals.dataset_saved, sender=Dataset, dispatch_uid="leaderboards.dataset_saved")

        # A round that stops collecting gets its artefact probes measured (leaderboards.probes).
        from tasks.models import Round
        from tasks.signals import round_ended

        from .probes import handlers as probe_handlers

        round_ended.connect(probe_handlers.on_round_ended, dispatch_uid="leaderboards.probes.round_ended")
        post_save.connect(
            probe_handlers.on_round_saved, sender=Round, dispatch_uid="leaderboards.probes.round_saved"
        )

        # The task page (tasks, below) shows the cycle matrix through its section registry.
        from tasks import page_sections

        from .cycle import task_page_section

        page_sections.register(task_page_section)

        # The audit log (core/audit.py): who released which round version (a release never changes).
        audit.register(
            Release,
            task_of=lambda release: release.task_id,
            include_fields=["task", "round", "version", "sha256", "licence", "path"],
        )

        # The recurring job (created by ``manage.py ensure_schedules`` and ``setup_demo``): every minute,
        # evaluations cut off with their worker run again and forgotten pending ones queued again.
        from core.job_queue import register_schedule

        from .jobs import SWEEP_SCHEDULE

        register_schedule(SWEEP_SCHEDULE, "leaderboards.jobs.sweep_evaluations_job", minutes=1)
