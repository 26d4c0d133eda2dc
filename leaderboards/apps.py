from django.apps import AppConfig
from django.db.models.signals import post_save


class LeaderboardsConfig(AppConfig):
    name = "leaderboards"
    verbose_name = "Leaderboards"

    def ready(self) -> None:
        # Imported here as Django requires: models cannot be imported before the app registry is ready.
        from models_registry.models import RegisteredModel

        from . import signals
        from .models import Dataset

        # A model becoming ready, or a new dataset, starts only the evaluations missing.
        post_save.connect(
            signals.model_saved, sender=RegisteredModel, dispatch_uid="leaderboards.model_saved"
        )
        post_save.connect(signals.dataset_saved, sender=Dataset, dispatch_uid="leaderboards.dataset_saved")

        # The recurring job (created by ``manage.py ensure_schedules`` and ``setup_demo``): every minute,
        # evaluations cut off with their worker run again and forgotten pending ones queued again.
        from core.job_queue import register_schedule

        from .jobs import SWEEP_SCHEDULE

        register_schedule(SWEEP_SCHEDULE, "leaderboards.jobs.sweep_evaluations_job", minutes=1)
