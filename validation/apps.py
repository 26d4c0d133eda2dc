from django.apps import AppConfig


class ValidationConfig(AppConfig):
    name = "validation"
    verbose_name = "Validation"

    def ready(self) -> None:
        # Imported here as Django requires: models cannot be imported before the app registry is ready.
        from core import audit

        from . import signals
        from .models import Validation

        # The audit log (core/audit.py): owner verdicts only, not every vote.
        audit.register(
            Validation,
            task_of=lambda validation: validation.example.round.task_id,
            only_if=lambda validation, action: validation.is_owner_verdict,
        )

        def log_owner_settlement(sender, example, status, previous, **kwargs) -> None:
            """The status an owner verdict set (settling a pending example or overturning a settled one),
            by the owner; a quorum's settlement is no owner action. Settling is a queryset update (no
            model signal), hence ``record_change``. Both services store the owner verdict before they
            settle, and an example has at most one, so its presence says who settled."""
            if Validation.objects.filter(example_id=example.pk, is_owner_verdict=True).exists():
                audit.record_change(
                    example, changes={"status": (previous, status)}, task_id=example.round.task_id
                )

        signals.example_settled.connect(
            log_owner_settlement, weak=False, dispatch_uid="validation.audit_owner_settlement"
        )
