from django.apps import AppConfig
from django.core.signals import request_finished

from models_registry.runtime.slots import GENERATION_SLOTS


class ModelsRegistryConfig(AppConfig):
    name = "models_registry"
    verbose_name = "Model registry"

    def ready(self) -> None:
        # Imported here as Django requires: models cannot be imported before the app registry is ready.
        from core import audit
        from models_registry.models import RegisteredModel, RoundTarget

        # The audit log (core/audit.py): a model's publication and visibility (not its check status,
        # card or timestamps), and the rounds' targets.
        audit.register(
            RegisteredModel,
            task_of=lambda model: model.task_id,
            include_fields=["task", "name", "owner", "is_published", "is_anonymous"],
        )
        audit.register(RoundTarget, task_of=lambda target: target.round.task_id)

        # The recurring job (created by ``manage.py ensure_schedules`` and ``setup_demo``): every 5 minutes,
        # model checks cut off with their worker, or lost before they ran, are mended.
        from core.job_queue import register_schedule

        from .jobs import CHECK_SWEEP_SCHEDULE

        register_schedule(CHECK_SWEEP_SCHEDULE, "models_registry.jobs.sweep_model_checks_job", minutes=5)

        # A place in line promised to a request thread (runtime/slots.py, ``admit``) and not taken, because
        # the request was refused for another reason after the check, is given back when the request ends
        # (a streamed answer's once the stream is closed): it would otherwise count as waiting.
        request_finished.connect(_withdraw_promise, dispatch_uid="models_registry.withdraw_promise")


def _withdraw_promise(sender, **kwargs) -> None:
    GENERATION_SLOTS.withdraw()
