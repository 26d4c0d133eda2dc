from django.apps import AppConfig


class CrowdConfig(AppConfig):
    """Crowd studies, participants and the pay ledger. Listens to the tasks, annotation and validation
    signals (``tasks.signals``, ``annotation.signals``, ``validation.signals``): the apps below know
    nothing of pay, of studies ending with their round, or of the ``study`` rule for crowd accounts."""

    name = "crowd"
    verbose_name = "Crowd studies"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from annotation.signals import example_created, example_retracted
        from tasks import qualification
        from tasks.signals import round_ended
        from validation.models import GoldAnswer
        from validation.signals import example_settled, validation_recorded, verdict_undone

        from . import contribution, handlers

        example_created.connect(handlers.on_example_changed, dispatch_uid="crowd.example_created")
        example_retracted.connect(handlers.on_example_changed, dispatch_uid="crowd.example_retracted")
        example_settled.connect(handlers.on_example_changed, dispatch_uid="crowd.example_settled")
        validation_recorded.connect(handlers.on_validation_recorded, dispatch_uid="crowd.validation_recorded")
        verdict_undone.connect(handlers.on_verdict_undone, dispatch_uid="crowd.verdict_undone")
        post_save.connect(
            handlers.on_gold_answer_saved, sender=GoldAnswer, dispatch_uid="crowd.gold_answer_saved"
        )
        # A study ends with its round (docs/crowd.md, "When the round changes"): rounds end only through
        # the tasks services (the admin's round fields are read-only; its actions call the services).
        round_ended.connect(handlers.on_round_ended, dispatch_uid="crowd.round_ended")
        # A crowd account works only inside a running study (crowd/contribution.py): the first rule
        # ``check_can_contribute`` tries.
        qualification.add_contribution_rule("study", contribution.check_study_running)

        # The audit log (core/audit.py): study settings (not the entry key), payment batches, and a
        # ledger row's payment when it is saved; not the ledger rows every example and vote adds.
        from core import audit

        from .models import LedgerEntry, PaymentBatch, Study

        audit.register(
            Study, task_of=lambda study: study.round.task_id, exclude_fields=["entry_key", "created_at"]
        )
        audit.register(
            PaymentBatch,
            task_of=lambda batch: batch.study.round.task_id,
            exclude_fields=["content", "created_at"],
        )
        audit.register(
            LedgerEntry,
            task_of=lambda entry: entry.round.task_id,
            include_fields=["paid_at", "batch", "amount", "currency"],
            only_if=lambda entry, action: action != audit.CREATE,
        )

        # The recurring job (created by ``manage.py ensure_schedules`` and ``setup_demo``): every 5 minutes,
        # the active participations past their study's time limit are abandoned, freeing their places.
        from core.job_queue import register_schedule

        from .jobs import ABANDON_SCHEDULE

        register_schedule(ABANDON_SCHEDULE, "crowd.jobs.abandon_expired_job", minutes=5)
