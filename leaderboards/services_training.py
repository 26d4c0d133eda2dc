"""Train a task's target model on rounds' examples, measure it, register it (orchestration across apps).

This sits in ``leaderboards`` because it reads examples (annotation), static datasets (leaderboards),
trains and registers models (models_registry) and sets round targets (models_registry).
torch is only imported, lazily, through ``models_registry.training`` and ``models_registry.inference``.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from annotation.models import Example
from models_registry.models import RegisteredModel
from models_registry.round_targets import set_round_targets
from models_registry.services import register_local_model
from tasks.models import Round, Task

from .models import Dataset
from .services import hash_split

HATECHECK_SLUG = "hatecheck"
#: The training recipes of ``models_registry.training`` (repeated here so that importing this module,
#: or the command, loads no torch; a test checks that both agree).
RECIPES = ("quick", "finetune")
DEFAULT_EVAL_DATASETS = (HATECHECK_SLUG,)

Progress = Callable[[str], None]
T = TypeVar("T")


class TargetTrainingError(Exception):
    """The target model cannot be trained as asked (unknown round, no examples...); the message says why."""


@dataclass
class LabelledTexts:
    """Texts (or text pairs) with their label strings, and how many examples were skipped and why."""

    texts: list = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.texts)


def _texts_of(task: Task, rows: Sequence[tuple[dict, object]]) -> LabelledTexts:
    """Build model texts (task's model_input_fields) and labels; skip rows with a missing field or label."""
    fields = task.cfg.model_input_fields
    known = set(task.cfg.labels)
    out = LabelledTexts()
    for inputs, target in rows:
        values = [inputs.get(f) if isinstance(inputs, dict) else None for f in fields]
        if not all(isinstance(v, str) and v.strip() for v in values) or target not in known:
            out.skipped += 1
            continue
        out.texts.append(values[0] if len(values) == 1 else (values[0], values[1]))
        out.labels.append(target)
    return out


def usable_examples(task: Task, rounds: Sequence[Round]) -> QuerySet[Example]:
    """Examples whose label may be trusted: settled ``validated_correct`` and not retracted."""
    return Example.objects.filter(
        round__task=task,
        round__in=list(rounds),
        status=Example.Status.VALIDATED_CORRECT,
        is_retracted=False,
    )


def split_examples(task: Task, rounds: Sequence[Round], split: str) -> QuerySet[Example]:
    """The rounds' usable examples of one split ("train", "dev" or "test").

    An example's split is the one its round dataset puts it in (``leaderboards.services.split_of``):
    its own when imported, else ``hash_split(pk)``. So a target trained on rounds 1-2 never trains on
    an example of ``round-1-test`` or ``round-2-test``, the datasets it is then scored on.
    """
    usable = usable_examples(task, rounds)
    unsplit = usable.filter(split="").values_list("pk", flat=True)
    hashed = [pk for pk in unsplit.iterator() if hash_split(pk) == split]
    return usable.filter(Q(split=split) | Q(pk__in=hashed))


def training_examples(task: Task, rounds: Sequence[Round]) -> QuerySet[Example]:
    """The training split of the rounds (``split_examples(task, rounds, "train")``): imported
    ``split="train"`` rows plus settled platform-written examples whose id hashes to train (80%)."""
    return split_examples(task, rounds, Example.Split.TRAIN)


def _rows(queryset: QuerySet[Example]) -> list[tuple[dict, object]]:
    """``(model input, target)`` per example; the model input holds the context's fields too (NLI premise)."""
    rows = queryset.order_by("round__number", "id").values_list("context__data", "inputs", "target")
    return [
        ({**(context or {}), **inputs} if isinstance(inputs, dict) else inputs, target)
        for context, inputs, target in rows
    ]


def _accuracy(classifier, data: LabelledTexts) -> float | None:
    if not len(data):
        return None
    predictions = classifier.predict_batch(data.texts)
    correct = sum(p["label"] == gold for p, gold in zip(predictions, data.labels, strict=True))
    return round(correct / len(data), 4)


def _say(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(message)


def card_description(
    *, backbone: str, pooling: str, recipe: str, task_name: str, rounds: Sequence[int]
) -> str:
    """The model card's one-line description of a classifier this project trained.

    Args:
        backbone: the encoder's name (e.g. ``sentence-transformers/all-MiniLM-L6-v2``).
        pooling: the model's ``config.pooling``: ``"mean"`` (one mean-pooled vector of the input) or
            ``"pair"`` (premise and hypothesis encoded separately, head on ``(u, v, |u-v|, u*v)``;
            ``models_registry.modeling``, after Conneau et al. 2017 and Reimers & Gurevych 2019).
        recipe: the training recipe ("quick" or "finetune").
        task_name / rounds: what it was trained on.

    Raises:
        ValueError: an unknown pooling (so a card never describes a head the model does not have).
    """
    if pooling == "pair":
        head = (
            "pair pooling (the two texts, e.g. premise and hypothesis, encoded separately and mean-pooled "
            "into u and v) and a classification head on (u, v, |u-v|, u*v)"
        )
    elif pooling == "mean":
        head = "a mean-pooling classification head"
    else:
        raise ValueError(f"unknown pooling {pooling!r}; expected 'mean' or 'pair'")
    return f"{backbone} with {head}, {recipe} recipe, trained on {task_name} round(s) {', '.join(map(str, rounds))}."


def default_model_name(rounds: Sequence[int], recipe: str) -> str:
    """E.g. ``minilm-quick-r1-2-3``."""
    return f"minilm-{recipe}-r{'-'.join(str(n) for n in sorted(rounds))}"


#: A registered model name that is also a safe directory name: no path separator, no leading dot or dash.
MODEL_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", re.ASCII)
MODEL_NAME_RULE = (
    "1 to 100 characters: ASCII letters, digits, '.', '_' and '-', starting with a letter or digit"
)


def check_model_name_syntax(name: str) -> str:
    """Return ``name`` when it may be a trained model's name (and its directory name), else raise.

    Raises:
        TargetTrainingError: ``invalid model name '../x': use 1 to 100 characters: ...``.
    """
    if not isinstance(name, str) or not MODEL_NAME_RE.fullmatch(name):
        raise TargetTrainingError(f"invalid model name {name!r}: use {MODEL_NAME_RULE}")
    return name


def model_dir(task: Task, name: str) -> Path:
    """Where the trained model ``name`` of ``task`` lives: ``DYNABENCH_MODEL_DIR/<task slug>/<name>``."""
    return Path(settings.DYNABENCH_MODEL_DIR) / task.slug / check_model_name_syntax(name)


def check_model_name_free(task: Task, name: str) -> str:
    """Return ``name`` when it is valid and neither a registered model of ``task`` nor an existing
    directory under the task's model folder; else raise.

    Raises:
        TargetTrainingError: an invalid name (``check_model_name_syntax``), or
            ``a model named X already exists for task T; choose another name``.
    """
    folder = model_dir(task, name)
    if RegisteredModel.objects.filter(task=task, name=name).exists() or os.path.lexists(folder):
        raise TargetTrainingError(
            f"a model named {name} already exists for task {task.slug}; choose another name"
        )
    return name


def work_dir_pattern(name: str) -> str:
    """The glob of ``train_target_for_rounds``' work directories of model ``name`` (next to the model)."""
    return f".{check_model_name_syntax(name)}.training-*"


def _swap_into_place(new_dir: Path, final_dir: Path) -> None:
    """Replace ``final_dir`` by ``new_dir`` so that a failed training never leaves a half-written model."""
    if final_dir.exists():
        old = final_dir.with_name(f".{final_dir.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final_dir, old)
        os.replace(new_dir, final_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new_dir, final_dir)


@dataclass(frozen=True)
class TrainingPlan:
    """What ``plan_training`` checked: the round numbers (sorted, distinct), the model name, the rounds
    to train on (by number) and the round the model is to become the target of (or None)."""

    numbers: list[int]
    name: str
    rounds: list[Round]
    target: Round | None


def plan_training(
    task: Task,
    rounds: Sequence[int],
    *,
    recipe: str,
    name: str | None,
    target_round: int | None,
    replace: bool,
) -> TrainingPlan:
    """Check a training request before anything is read or trained, for classifiers and span models.

    The name comes first (default ``default_model_name(rounds, recipe)``): a refused name reads,
    trains and creates nothing. With ``replace`` its syntax is checked, else also that it is free
    (``check_model_name_free``). Then every round of ``rounds`` and ``target_round`` must exist.

    Raises:
        TargetTrainingError: no round given, a bad or taken name, ``task X has no round(s) [7]``, or
            ``task X has no round 9 to make this model the target of``.
    """
    if not rounds:
        raise TargetTrainingError("give at least one round to train on")
    numbers = sorted(set(rounds))
    name = name or default_model_name(numbers, recipe)
    if replace:
        check_model_name_syntax(name)
    else:
        check_model_name_free(task, name)
    round_objs = list(Round.objects.filter(task=task, number__in=numbers).order_by("number"))
    missing = sorted(set(numbers) - {r.number for r in round_objs})
    if missing:
        raise TargetTrainingError(f"task {task.slug} has no round(s) {missing}")
    target = None
    if target_round is not None:
        target = Round.objects.filter(task=task, number=target_round).first()
        if target is None:
            raise TargetTrainingError(
                f"task {task.slug} has no round {target_round} to make this model the target of"
            )
    return TrainingPlan(numbers=numbers, name=name, rounds=round_objs, target=target)


def train_into_place(task: Task, name: str, train: Callable[[Path], T], *, replace: bool) -> tuple[T, Path]:
    """Run ``train(work_dir)`` in a fresh work directory next to the model's, then swap it into place.

    The work directory is ``.<name>.training-<8 hex>`` beside ``model_dir(task, name)`` (the glob of
    ``work_dir_pattern``) and is always removed. Without ``replace`` the name is checked again after
    training (training takes minutes: another job may have taken it meanwhile). This process's cached
    model of the final directory is dropped, so it never serves the replaced weights.

    Returns:
        ``(what train returned, the final directory)``.

    Raises:
        TargetTrainingError: ``train`` raised ``models_registry.training.TrainingError`` (its message),
            or the name was taken meanwhile.
    """
    from models_registry.inference import clear_cache
    from models_registry.training import TrainingError

    final_dir = model_dir(task, name)
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    work_dir = final_dir.with_name(f".{name}.training-{uuid.uuid4().hex[:8]}")
    try:
        result = train(work_dir)
        if not replace:
            check_model_name_free(task, name)
        _swap_into_place(work_dir, final_dir)
    except TrainingError as exc:
        raise TargetTrainingError(str(exc)) from exc
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    # register_local_model clears it again before its check.
    clear_cache(final_dir)
    return result, final_dir


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
    _say(progress, f"registering {plan.name} (loading and checking it)…")
    model = register_local_model(task=task, name=plan.name, path=str(path), card=card, owner=owner)
    if model.status != RegisteredModel.Status.READY:
        _say(progress, f"registration failed: {model.error_message}")
        return model
    if plan.target is not None:
        set_round_targets(round=plan.target, models=[model])
        _say(progress, f"{model.name} is now the target model of round {plan.target.number}")
    return model


def train_target_for_rounds(
    *,
    task: Task,
    rounds: list[int],
    recipe: str = "quick",
    name: str | None = None,
    target_round: int | None = None,
    seed: int = 0,
    epochs: int = 3,
    backbone_path: str | Path | None = None,
    eval_datasets: Sequence[str] = DEFAULT_EVAL_DATASETS,
    owner=None,
    progress: Progress | None = None,
    replace: bool = False,
) -> RegisteredModel:
    """Train a model on the rounds' training splits, measure it, register it and optionally make it a target.

    A task with a span target (extractive QA) trains a span model instead
    (``services_qa_training.train_qa_target_for_rounds``, same arguments but ``epochs`` and
    ``eval_datasets``).

    Data: training = ``training_examples`` of the rounds; model selection on their dev split
    (``split="dev"``); test accuracy on each round's test split and on each dataset of ``eval_datasets``
    that exists for the task (HateCheck by default). Only settled ``validated_correct`` examples count.

    The model is written to ``settings.DYNABENCH_MODEL_DIR / task.slug / name``. A name that is already
    taken (a registered model of the task, or an existing directory) is refused unless ``replace``; with
    ``replace`` the directory is replaced atomically and this process's cached classifier of that path is
    dropped. It is registered with ``register_local_model`` (idempotent on the name) with a model card
    holding backbone, preprocessing, rounds and sizes, parameter count, dev and test accuracies, recipe
    and seed. With ``target_round`` it becomes that round's only target model. A target trained on its
    own round's training split (the case of round 1, which has no earlier round) is marked as such in
    the card (``trained_on_target_round``).

    Args:
        rounds: round numbers whose examples to train on.
        recipe: "quick" or "finetune" (see ``models_registry.training``).
        name: registered model name; default ``default_model_name(rounds, recipe)``. It must match
            ``MODEL_NAME_RE`` (it is also the directory name).
        backbone_path: encoder directory; default the offline all-MiniLM-L6-v2.
        progress: called with one line before each long step and after each result.
        replace: re-train a model whose name is taken, replacing its directory and updating its
            registry row (the demo re-training a model whose directory was deleted). Other processes
            that already loaded the old weights keep them until they restart.

    Returns:
        The registered model (status ``ready``, or ``failed`` with its error message).

    Raises:
        TargetTrainingError: an invalid name, a name already taken (without ``replace``), a round that
            does not exist, no training examples, a single class, or a training failure.
    """
    from models_registry.inference import InferenceError, get_classifier
    from models_registry.training import train_classifier

    if task.cfg.target_field["type"] == "context_span":  # extractive QA: a span model, not a classifier
        from .services_qa_training import train_qa_target_for_rounds

        return train_qa_target_for_rounds(
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
    plan = plan_training(task, rounds, recipe=recipe, name=name, target_round=target_round, replace=replace)
    numbers, name, round_objs = plan.numbers, plan.name, plan.rounds
    labels = task.cfg.labels
    if not labels:
        raise TargetTrainingError(
            f"task {task.slug} has no labels: only classification tasks can be trained here"
        )

    train = _texts_of(task, _rows(training_examples(task, round_objs)))
    dev = _texts_of(task, _rows(split_examples(task, round_objs, Example.Split.DEV)))
    if not len(train):
        raise TargetTrainingError(
            f"no validated training examples in round(s) {numbers} of {task.slug} "
            "(import them with: python manage.py import_hate_data, import_sentiment_data or import_nli_data)"
        )
    per_round = {
        str(r.number): {
            "train": training_examples(task, [r]).count(),
            "dev": split_examples(task, [r], Example.Split.DEV).count(),
            "test": split_examples(task, [r], Example.Split.TEST).count(),
        }
        for r in round_objs
    }
    _say(progress, f"training on rounds {numbers}: {len(train)} train, {len(dev)} dev examples ({recipe})")

    result, final_dir = train_into_place(
        task,
        name,
        lambda work_dir: train_classifier(
            train_texts=train.texts,
            train_labels=train.labels,
            dev_texts=dev.texts,
            dev_labels=dev.labels,
            labels=labels,
            output_dir=work_dir,
            recipe=recipe,
            seed=seed,
            epochs=epochs,
            backbone_path=backbone_path,
            progress=progress,
        ),
        replace=replace,
    )

    test_accuracy: dict[str, dict] = {}
    try:
        _say(progress, "loading the trained model to measure it…")
        classifier = get_classifier(final_dir)
        for r in round_objs:
            data = _texts_of(task, _rows(split_examples(task, [r], Example.Split.TEST)))
            if len(data):
                _say(progress, f"evaluating on round {r.number}'s test split ({len(data):,} examples)…")
                acc = _accuracy(classifier, data)
                test_accuracy[f"round-{r.number}-test"] = {"accuracy": acc, "n": len(data)}
                _say(progress, f"round {r.number} test: {acc:.4f} ({len(data)} examples)")
        for slug in eval_datasets:
            dataset = Dataset.objects.filter(task=task, slug=slug).first()
            if dataset is None:
                continue
            data = _texts_of(task, list(dataset.items.order_by("id").values_list("inputs", "target")))
            if len(data):
                _say(progress, f"evaluating on {dataset.name} ({len(data):,} items)…")
                acc = _accuracy(classifier, data)
                test_accuracy[slug] = {"accuracy": acc, "n": len(data), "dataset": dataset.name}
                _say(progress, f"{dataset.name}: {acc:.4f} ({len(data)} items)")
    except InferenceError as exc:
        test_accuracy["error"] = {"message": str(exc)}

    on_own_round = target_round is not None and target_round in numbers
    card = {
        "description": card_description(
            backbone=result.details["backbone"],
            pooling=result.details.get("pooling", "mean"),
            recipe=recipe,
            task_name=task.name,
            rounds=numbers,
        ),
        "backbone": result.details["backbone"],
        "preprocessing": result.details["preprocessing"],
        "recipe": recipe,
        "seed": seed,
        "labels": labels,
        "training": {
            "rounds": numbers,
            "n_train": result.n_train,
            "n_dev": result.n_dev,
            "skipped": train.skipped + dev.skipped,
            "per_round": per_round,
            "seconds": result.seconds,
            **{k: v for k, v in result.details.items() if k not in ("backbone", "preprocessing", "seed")},
        },
        "parameter_count": result.parameter_count,
        "dev_accuracy": result.dev_accuracy,
        "test_accuracy": test_accuracy,
        "trained_at": timezone.now().isoformat(timespec="seconds"),
        "licence": task.config.get("licence", ""),
    }
    if target_round is not None:
        card["target_round"] = target_round
        card["trained_on_target_round"] = on_own_round
        if on_own_round:
            card["note"] = (
                f"Target of round {target_round} trained on round {target_round}'s own training split"
                + (" (round 1 has no earlier round to train on)." if target_round == 1 else ".")
                + " Its error rate on that round is not an adversarial measure."
            )

    return register_trained_target(
        task=task, plan=plan, path=final_dir, card=card, owner=owner, progress=progress
    )
