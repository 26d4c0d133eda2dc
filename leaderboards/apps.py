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

        # The audit log (core/audit.py): who released which round version (a release never changes).
        audit.register(
            Release,
            task_of=lambda release: release.task_id,
            include_fields=["task", "round", "version", "sha256", "licence", "path"],
        )
