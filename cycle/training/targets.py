"""The entry point of training a round's target: a classifier for a task with a label target, a span
model for extractive QA (docs/architecture.md, "Training the next target")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cycle.kinds import rules_for
from leaderboards.selectors import DEFAULT_EVAL_DATASETS
from models_registry.models import RegisteredModel
from tasks.models import Task

from .classifier import train_classifier_target
from .planning import Progress, TargetTrainingError
from .span import train_qa_target_for_rounds


def train_target_for_rounds(
    *,
    task: Task,
    rounds: list[int],
    recipe: str = "quick",
    name: str | None = None,
    target_round: int | None = None,
    seed: int = 0,
    epochs: int = 3,
    backbone: str = "minilm",
    backbone_path: str | Path | None = None,
    natural: str = "",
    natural_share: float = 0.0,
    eval_datasets: Sequence[str] = DEFAULT_EVAL_DATASETS,
    owner=None,
    progress: Progress | None = None,
    replace: bool = False,
) -> RegisteredModel:
    """Train a target on the rounds' settled examples, measure it, register it and optionally make it
    round ``target_round``'s only target.

    A task whose target is a context span (extractive QA) trains a span model
    (``span.train_qa_target_for_rounds``, which takes neither ``epochs`` nor ``eval_datasets``, and only
    the minilm backbone without natural data); any other task a classifier
    (``classifier.train_classifier_target``, whose docstring gives the data, the backbone and
    natural-data choices, the model card and the errors raised).

    Returns:
        The registered model (status ``ready``, or ``failed`` with its error message).

    Raises:
        TargetTrainingError: see ``classifier.train_classifier_target`` and ``span.train_qa_target_for_rounds``.
    """
    common = dict(
        task=task,
        rounds=rounds,
        recipe=recipe,
        name=name,
        target_round=target_round,
        seed=seed,
        backbone_path=backbone_path,
        owner=owner,
        progress=progress,
        replace=replace,
    )
    if rules_for(task.cfg).span_answers:
        if backbone != "minilm" or natural:
            raise TargetTrainingError(
                "extractive QA targets train on the minilm backbone without natural data; "
                f"got backbone {backbone!r}" + (f" and natural data {natural!r}" if natural else "")
            )
        return train_qa_target_for_rounds(**common)
    return train_classifier_target(
        **common,
        epochs=epochs,
        eval_datasets=eval_datasets,
        backbone=backbone,
        natural=natural,
        natural_share=natural_share,
    )
