"""Putting a trained model in place: train into a work folder, swap it in atomically, register it and
optionally make it a round's target.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from annotation.models import Example
from models_registry.models import RegisteredModel
from models_registry.round_targets import set_round_targets
from models_registry.runtime_facts import int8_plans_tried
from models_registry.services import register_local_model
from models_registry.serving import clear_cache, swap_into_place
from tasks.models import Task

from .examples import model_rows, split_examples
from .planning import Progress, T, TargetTrainingError, TrainingPlan, check_model_name_free, model_dir, say


def train_into_place(task: Task, name: str, train: Callable[[Path], T], *, replace: bool) -> tuple[T, Path]:
    """Run ``train(work_dir)`` in a fresh work directory next to the model's, then swap it into place.

    The work directory is ``.<name>.training-<8 hex>`` beside ``model_dir(task, name)`` (the glob of
    ``work_dir_pattern``) and is always removed. Without ``replace`` the name is checked again after
    training (training takes minutes: another job may have taken it meanwhile). This process's cached
    model of the final directory is dropped, so it never serves the replaced weights.

    Returns:
        ``(what train returned, the final directory)``.

    Raises:
        TargetTrainingError: ``train`` raised ``engine.training.classifier.TrainingError`` (its message),
            or the name was taken meanwhile.
    """
    # Imported here, not at the top: engine.training.classifier loads torch.
    from models_registry.serving import TrainingError

    final_dir = model_dir(task, name)
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    work_dir = final_dir.with_name(f".{name}.training-{uuid.uuid4().hex[:8]}")
    try:
        result = train(work_dir)
        if not replace:
            check_model_name_free(task, name)
        swap_into_place(work_dir, final_dir)
    except TrainingError as exc:
        raise TargetTrainingError(str(exc)) from exc
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    # register_local_model clears it again before its check.
    clear_cache(final_dir)
    return result, final_dir


def held_apart_rows(task: Task, plan: TrainingPlan, limit: int = 400) -> list[tuple[dict, object]]:
    """``(model input, target)`` of examples the training never fitted: the dev examples of the plan's
    rounds (model selection only), then their test examples, at most ``limit``; the ONNX export is
    checked on them."""
    rows = []
    for split in (Example.Split.DEV, Example.Split.TEST):
        rows += model_rows(split_examples(task, plan.rounds, split))[:limit]
    return rows[:limit]


def register_trained_target(
    *, task: Task, plan: TrainingPlan, path: Path, card: dict, owner, progress: Progress | None
) -> RegisteredModel:
    """Register the trained model ``plan.name`` at ``path`` with its card and, when ready and
    ``plan.target`` is set, make it that round's only target.

    Registered through ``register_local_model`` with ``is_published`` left to it: a new model that
    passes its check is published (a platform-trained target belongs on the leaderboard), an existing
    one (``replace``) keeps its flag.

    Returns:
        The model, ``ready`` or ``failed`` (then no round target is changed).
    """
    say(progress, f"registering {plan.name} (loading, checking and exporting it)…")
    held_apart = held_apart_rows(task, plan)
    model = register_local_model(
        task=task,
        name=plan.name,
        path=str(path),
        card=card,
        owner=owner,
        check_inputs=[inputs for inputs, _ in held_apart],
        check_targets=[target for _, target in held_apart],
    )
    if model.status != RegisteredModel.Status.READY:
        say(progress, f"registration failed: {model.error_message}")
        return model
    block = model.card.get("runtime") or {}
    plans = "; ".join(int8_plans_tried(model))
    say(
        progress,
        f"{model.name} is served on {model.runtime}"
        + (f" (int8 plans tried: {plans})" if plans else "")
        + (f" ({block['message']})" if block.get("message") else ""),
    )
    if plan.target is not None:
        set_round_targets(round=plan.target, models=[model])
        say(progress, f"{model.name} is now the target model of round {plan.target.number}")
    return model
