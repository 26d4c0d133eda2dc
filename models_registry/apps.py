from django.apps import AppConfig
from django.conf import settings
from django.core.signals import request_finished, setting_changed

from engine import config as engine_config
from engine.runtime.slots import GENERATION_SLOTS


class ModelsRegistryConfig(AppConfig):
    name = "models_registry"
    verbose_name = "Model registry"

    def ready(self) -> None:
        # The engine imports no Django: it is handed the project's settings here, and again whenever a
        # DYNABENCH_* setting changes (a test's ``settings`` fixture, ``override_settings``).
        engine_config.configure({name: getattr(settings, name) for name in dir(settings) if name.isupper()})
        setting_changed.connect(_hand_setting_to_engine, dispatch_uid="models_registry.engine_settings")

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


def _hand_setting_to_engine(sender, setting: str, **kwargs) -> None:
    if not setting.startswith(engine_config.PREFIX):
        return
    # Read back rather than trust ``value``: when an override ends the setting may no longer exist.
    if hasattr(settings, setting):
        engine_config.configure({setting: getattr(settings, setting)})
    else:
        engine_config.configure({}, removed=(setting,))


def _withdraw_promise(sender, **kwargs) -> None:
    GENERATION_SLOTS.withdraw()
