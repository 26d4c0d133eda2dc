"""Running the round's target models on an example: one ``Prediction`` per model, each model's verdict
and the example's ``model_wrong`` under the task's rule and ensemble rule (docs/domain.md,
"Model-wrong rules"). Decided here, on the server, never taken from the client. A model that fails
leaves its prediction failed and ``model_wrong`` undecided until ``retry_failed_predictions``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from django.db import transaction

from models_registry import serving
from models_registry.serving import clean_output
from tasks import rules
from tasks.config import TaskConfig

from . import selectors
from .models import Example, Prediction

logger = logging.getLogger(__name__)


@dataclass
class Outcome:
    """One model's result on one example, computed before the transaction."""

    model: object
    output: dict = field(default_factory=dict)
    error: str = ""
    latency_ms: float | None = None
    #: The runtime the model ran on (``engine.runtime.runtimes``); "" for a remote endpoint.
    runtime: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def run_model(model, model_input: dict) -> Outcome:
    """Run one target model on one input; any failure becomes an error message, never an exception."""
    started = time.perf_counter()
    runtime = "" if model.source == model.Source.ENDPOINT else model.runtime
    try:
        outputs = serving.predict(model, [model_input])
        if len(outputs) != 1 or not isinstance(outputs[0], dict):
            raise serving.InferenceError(f"expected one output, got {outputs!r:.200}")
        output = clean_output(outputs[0])
        return Outcome(
            model, output=output, latency_ms=(time.perf_counter() - started) * 1000, runtime=runtime
        )
    except Exception as exc:  # noqa: BLE001 - a crashing model must never lose the annotator's example
        logger.warning("target model %s failed on an example: %s", model.pk, exc, exc_info=True)
        message = f"{type(exc).__name__}: {exc}"[:2000]
        return Outcome(
            model, error=message, latency_ms=(time.perf_counter() - started) * 1000, runtime=runtime
        )


def prediction_label(output: dict) -> str:
    """What ``Prediction.label`` (100 characters) keeps: the label, or the start of a span answer."""
    label = output.get("label", output.get("answer", ""))
    return str(label)[: Prediction._meta.get_field("label").max_length]


def model_verdict(cfg: TaskConfig, target, output: dict) -> bool | None:
    try:
        return rules.model_wrong(cfg, target=target, output=output)
    except ValueError:
        return None


def example_verdict(cfg: TaskConfig, verdicts: list[bool | None], any_failed: bool) -> bool | None:
    """The example's model_wrong: None while any model failed or any verdict is undecided."""
    if any_failed or not verdicts or any(v is None for v in verdicts):
        return None
    return rules.ensemble_model_wrong(cfg.ensemble_rule, verdicts)


def example_unsure(cfg: TaskConfig, outputs: list[dict], any_failed: bool) -> bool | None:
    """The example's ``model_unsure`` in uncertainty mode (``tasks.uncertainty``): each model's
    ``unsure`` on its output, combined by the task's ensemble rule as the model-wrong verdicts are
    (``any``, ``all`` or a strict ``majority`` unsure). None outside uncertainty mode, while any model
    failed, or when an output has no measure."""
    goal = cfg.uncertainty
    if goal is None or any_failed or not outputs:
        return None
    verdicts = [goal.unsure(output) for output in outputs]
    if any(v is None for v in verdicts):
        return None
    return rules.ensemble_model_wrong(cfg.ensemble_rule, verdicts)


def prediction_status(n_models: int, any_failed: bool) -> str:
    if n_models == 0:
        return Example.PredictionStatus.NONE
    return Example.PredictionStatus.FAILED if any_failed else Example.PredictionStatus.OK


def retry_failed_predictions(*, limit: int | None = None) -> dict[str, int]:
    """Re-run the failed models of examples whose prediction failed, and score those that now succeed.

    Each example's failed predictions are retried outside any transaction; the results are stored
    under a row lock on the example, so two concurrent retries never double-write (the second one
    sees the predictions already done and leaves them).

    Returns:
        ``{"examples": tried, "completed": now scored, "still_failed": still failing}``.
    """
    qs = selectors.examples_with_failed_predictions().select_related("round__task", "context")
    if limit is not None:
        qs = qs[:limit]
    counts = {"examples": 0, "completed": 0, "still_failed": 0}
    for example in list(qs):
        counts["examples"] += 1
        failed = list(
            example.predictions.filter(status=Prediction.Status.FAILED).select_related("model__task")
        )
        model_input = example.model_input
        outcomes = {p.pk: run_model(p.model, model_input) for p in failed}
        if _store_retry(example, outcomes) == Example.PredictionStatus.OK:
            counts["completed"] += 1
        else:
            counts["still_failed"] += 1
    return counts


@transaction.atomic
def _store_retry(example: Example, outcomes: dict[int, Outcome]) -> str:
    locked = Example.objects.select_for_update().select_related("round__task").get(pk=example.pk)
    cfg = locked.round.task.cfg
    predictions = list(locked.predictions.select_for_update().order_by("id"))
    for p in predictions:
        outcome = outcomes.get(p.pk)
        if outcome is None or p.status != Prediction.Status.FAILED:
            continue
        if outcome.ok:
            p.status = Prediction.Status.OK
            p.label = prediction_label(outcome.output)
            p.output = outcome.output
            p.model_wrong = model_verdict(cfg, locked.target, outcome.output)
            p.error = ""
        else:
            p.error = outcome.error
        p.latency_ms, p.runtime = outcome.latency_ms, outcome.runtime
        p.save(
            update_fields=[
                "status",
                "label",
                "output",
                "model_wrong",
                "error",
                "latency_ms",
                "runtime",
                "updated_at",
            ]
        )
    any_failed = any(p.status == Prediction.Status.FAILED for p in predictions)
    verdicts = [p.model_wrong for p in predictions if p.status == Prediction.Status.OK]
    locked.prediction_status = prediction_status(len(predictions), any_failed)
    locked.model_wrong = example_verdict(cfg, verdicts, any_failed)
    outputs = [p.output for p in predictions if p.status == Prediction.Status.OK]
    locked.model_unsure = example_unsure(cfg, outputs, any_failed)
    locked.save(update_fields=["prediction_status", "model_wrong", "model_unsure", "updated_at"])
    return locked.prediction_status
