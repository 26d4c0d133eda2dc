"""Uncertainty mode's live goal: how sure the round's target models are of a draft, before it is sent
(``tasks.uncertainty``; docs/domain.md, "Uncertainty mode"). The create page asks as the annotator
types, the API at ``POST /api/tasks/{slug}/confidence/``; nothing is stored, and the decision that
counts is the one made when the example is stored (``services.create_example``)."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.models import Context, Task

from . import selectors, services
from .models import Example
from .predictions import example_unsure, prediction_label, run_model


@dataclass(frozen=True)
class ModelConfidence:
    """One target model on a draft: its public name, its answer (a label, or the start of a span's
    text), the task's measure of its output (a probability or a normalised entropy, in [0, 1]; None when
    it failed), whether that is unsure, and its error (empty when it answered)."""

    model: str
    answer: str
    value: float | None
    unsure: bool | None
    error: str = ""


@dataclass(frozen=True)
class ConfidenceProbe:
    """The round's target models on one draft: ``models`` in round order, and ``unsure`` for the draft
    (the task's ensemble rule over them, as at submission; None when a model failed)."""

    models: list[ModelConfidence]
    unsure: bool | None


def probe_confidence(*, task: Task, annotator, inputs: dict, context: Context | None) -> ConfidenceProbe:
    """Run the current round's target models on a draft of ``inputs`` (on ``context``) and measure each
    one's uncertainty by the task's goal.

    Raises:
        services.ExampleError: the task is not in uncertainty mode, not collecting, the writer may not
            write (blocked, qualification), the context is not the current round's, or the inputs are
            invalid (keyed by field, as for an example).
    """
    cfg = task.cfg
    goal = cfg.uncertainty
    if goal is None:
        raise services.ExampleError(
            "This task is not in uncertainty mode; the model answers when you submit."
        )
    round_ = task.open_round
    if round_ is None:
        raise services.ExampleError("This task is not collecting examples right now.")
    services.check_can_write(annotator, task)
    if context is not None and context.round_id != round_.pk:
        raise services.ExampleError({"context": ["This context is not part of the current round."]})
    clean, _ = services.clean_inputs(cfg, inputs, None, context=context, with_target=False)
    model_input = Example.model_input_from(clean, context.data if context else None)
    models = selectors.target_models_for_round(round_)
    services.check_models_read(cfg, models, model_input)
    outcomes = [run_model(m, model_input) for m in models]
    rows = [
        ModelConfidence(
            model=o.model.public_name,
            answer=prediction_label(o.output) if o.ok else "",
            value=goal.value(o.output) if o.ok else None,
            unsure=goal.unsure(o.output) if o.ok else None,
            error="" if o.ok else "The model did not answer.",
        )
        for o in outcomes
    ]
    any_failed = any(not o.ok for o in outcomes)
    return ConfidenceProbe(rows, example_unsure(cfg, [o.output for o in outcomes if o.ok], any_failed))


def as_json(cfg, probe: ConfidenceProbe) -> dict:
    """``probe`` as the API and the create page's script read it: ``{"goal", "unsure", "models"}``, each
    value rounded to 4 places."""
    return {
        "goal": cfg.uncertainty.as_dict(),
        "unsure": probe.unsure,
        "models": [
            {
                "model": row.model,
                "answer": row.answer,
                "value": None if row.value is None else round(row.value, 4),
                "unsure": row.unsure,
                "error": row.error,
            }
            for row in probe.models
        ],
    }
