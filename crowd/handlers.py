"""Receivers of the tasks, annotation and validation signals, and of ``post_save`` of ``GoldAnswer``
(connected in ``CrowdConfig.ready``). They run inside the sending service's
transaction, so a ledger row, a study's end or a refusal commits or rolls back with its event."""

from __future__ import annotations

from validation.models import GoldAnswer

from . import ledger, services


def on_example_changed(sender, example, **kwargs) -> None:
    """An example was written, retracted, settled or overturned: reconcile its ledger rows."""
    ledger.reconcile_example(example)


def on_validation_recorded(sender, validation, **kwargs) -> None:
    """A verdict was recorded: pay it under its validator's running participation, if any."""
    ledger.reconcile_validation(validation)


def on_gold_answer_saved(sender, instance, created, **kwargs) -> None:
    """A gold answer was stored (``validation.gold.services.record_gold_answer``): pay it as a verdict."""
    if created:
        ledger.reconcile_gold_answer(instance)


def on_verdict_undone(sender, instance, **kwargs) -> None:
    """A validator undid a verdict (``validation.verdict_undo``): reverse its pay, if it was paid."""
    prefix = "gold" if sender is GoldAnswer else "validation"
    ledger.reverse_verdict_pay(f"{prefix}:{instance.pk}", instance.validator_id)


def on_round_ended(sender, round, **kwargs) -> None:  # noqa: A002 (the signal's argument)
    """A round stopped collecting (``tasks.signals.round_ended``): end its live studies."""
    services.end_stranded_studies(task_id=round.task_id)
