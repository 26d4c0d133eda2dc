"""What the verdict partial (``annotation/_verdict.html``) shows of an example: each model's probability
for the label the annotator intended, "close call" when the model's top two labels were near, and
where the example stands with the validators. Pure functions of stored values (no queries)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tasks.config import TaskConfig

from .goal import goal_met, goal_words
from .models import Example, Prediction


def winning_margin(probabilities: dict) -> float | None:
    """The top probability minus the runner-up's, e.g. ``{"a": 0.57, "b": 0.43}`` -> 0.14.

    Args:
        probabilities: ``{label: probability}`` (probabilities in [0, 1]).

    Returns:
        The margin in [0, 1], or None with fewer than two numeric probabilities.
    """
    values = sorted(
        (float(v) for v in probabilities.values() if isinstance(v, int | float) and not isinstance(v, bool)),
        reverse=True,
    )
    if len(values) < 2:
        return None
    return values[0] - values[1]


def is_close_call(probabilities: dict, margin: float) -> bool:
    """True when the winning margin (``winning_margin``) is strictly under ``margin``: 0.57 vs 0.43 is a
    close call under the default 0.2 (margin 0.14), 0.8 vs 0.2 is not (0.6). False without a margin."""
    won_by = winning_margin(probabilities)
    # Rounded to 9 places, so 0.6 - 0.4 (0.19999999999999996 in binary) is not a close call under 0.2.
    return won_by is not None and round(won_by, 9) < margin


def apart_under(margin: float, limit: float) -> tuple[str, str]:
    """``margin`` and ``limit`` as text with the fewest decimals (2 to 6) at which the first reads less
    than the second, so a close call never says "0.20 apart, under 0.20": (0.14, 0.2) gives
    ("0.14", "0.20"), (0.196, 0.2) gives ("0.196", "0.200"). Two decimals when they do not differ that
    far (a margin not under the limit is no close call)."""
    for decimals in range(2, 7):
        if round(margin, decimals) < round(limit, decimals):
            return f"{margin:.{decimals}f}", f"{limit:.{decimals}f}"
    return f"{margin:.2f}", f"{limit:.2f}"


@dataclass(frozen=True)
class PredictionRow:
    """One model's answer as the verdict partial shows it.

    ``target_probability`` is the model's probability (0-1) for the label the annotator intended, None
    for span answers or when the output has no such label; ``percent`` the same in percent, rounded to
    one decimal; ``close_call`` per ``is_close_call`` with the task's ``close_call_margin``; ``margin`` the
    winning margin (top probability minus the runner-up's), None without probabilities.
    """

    prediction: Prediction
    target_probability: float | None
    close_call: bool
    margin: float | None = None
    close_call_margin: float | None = None

    @property
    def apart_under(self) -> tuple[str, str]:
        """The close call's sentence figures: ``margin`` and the task's margin as ``apart_under`` writes
        them; ("", "") without a margin."""
        if self.margin is None or self.close_call_margin is None:
            return "", ""
        return apart_under(self.margin, self.close_call_margin)

    @property
    def percent(self) -> str:
        """``target_probability`` as text, e.g. ``"12.5%"`` (empty when None)."""
        if self.target_probability is None:
            return ""
        return f"{self.target_probability * 100:.1f}%"


def prediction_rows(example: Example, predictions, cfg: TaskConfig) -> list[PredictionRow]:
    """``predictions`` (of ``example``, in display order) as ``PredictionRow``s.

    A failed prediction or a span answer gets no probability and no close call.
    """
    rows = []
    for p in predictions:
        probabilities = p.output.get("probabilities") if p.status == Prediction.Status.OK else None
        if not isinstance(probabilities, dict) or not isinstance(example.target, str):
            rows.append(PredictionRow(p, None, False))
            continue
        value = probabilities.get(example.target)
        probability = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        rows.append(
            PredictionRow(
                p,
                probability,
                is_close_call(probabilities, cfg.close_call_margin),
                winning_margin(probabilities),
                cfg.close_call_margin,
            )
        )
    return rows


@dataclass(frozen=True)
class UnsureRow:
    """One model's answer in uncertainty mode: the task's measure of it (``value``, in [0, 1]) and
    whether that is unsure (``tasks.uncertainty.UncertaintyGoal``)."""

    prediction: Prediction
    value: float
    unsure: bool


def unsure_rows(predictions, cfg: TaskConfig) -> list[UnsureRow]:
    """``predictions`` (in display order) as ``UnsureRow``s in uncertainty mode; [] outside it, and
    without the predictions that failed or have no measure."""
    goal = cfg.uncertainty
    if goal is None:
        return []
    rows = []
    for p in predictions:
        value = goal.value(p.output) if p.status == Prediction.Status.OK else None
        if value is not None:
            rows.append(UnsureRow(p, value, bool(goal.unsure(p.output))))
    return rows


def validation_state(example: Example, cfg: TaskConfig, *, is_author: bool = True) -> str:
    """One sentence on where ``example`` stands with the validators (docs/domain.md, "Validation").

    Waiting: a pending example of this platform that the queue serves (it fooled the model, or the task
    validates every example: ``validate_non_fooling``). Otherwise its settled status, its retraction
    (after a settlement: the status, then "retracted by its author"), or why it is not validated.
    ``is_author`` picks the wording: "your label" for the author, "the author's label" for anyone else
    (a task owner reading someone's example).
    """
    whose = "your" if is_author else "the author's"
    if example.is_retracted:
        if example.status != Example.Status.PENDING:
            return (
                f"{example.get_status_display()} by the validators, then retracted by its author: "
                "it no longer counts."
            )
        return "Retracted by its author: it will not be validated."
    if example.status != Example.Status.PENDING:
        return f"Status: {example.get_status_display().lower()}."
    if example.source == Example.Source.IMPORTED:
        return "Imported: it is not validated here."
    if goal_met(example, cfg) or cfg.validate_non_fooling:
        return f"Waiting for validation: other people will check that {whose} label is right."
    if example.prediction_status == Example.PredictionStatus.FAILED:
        return f"Waiting for the model's answer; if it {goal_words(cfg)}, it is then sent for validation."
    if example.prediction_status == Example.PredictionStatus.NONE:
        return "Not sent for validation yet: this round has no target model to fool."
    if example.model_wrong is None and cfg.uncertainty is None:  # ask_user: the author says
        waiting_on = "your answer above" if is_author else "the author's answer"
        return f"Waiting for {waiting_on}; if the model was wrong, it is then sent for validation."
    return f"Not sent for validation: in this task only examples that {goal_words(cfg, present=True)} are validated."


def authors_wording(label: str) -> str:
    """A field label written to the author ("The label you intend", "Your sentence") as a reader other
    than the author sees it ("The label the author intends", "The author's sentence"). A label without
    "you"/"your" is returned as it is.

    >>> authors_wording("The relation you intend (premise to hypothesis)")
    'The relation the author intends (premise to hypothesis)'
    """
    text = re.sub(r"\byou intend\b", "the author intends", label)
    text = re.sub(r"\bYour\b", "The author's", text)
    return re.sub(r"\byour\b", "the author's", text)
