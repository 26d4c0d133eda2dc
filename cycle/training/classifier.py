"""Train, measure and register a classifier target (labels: hate speech, sentiment, NLI) on a task's
rounds; ``span`` is its extractive-QA counterpart and ``targets.train_target_for_rounds`` chooses.

torch is only imported, lazily, through ``engine.training.classifier`` and ``engine.runtime.classifier``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from django.utils import timezone

from annotation.models import Example
from leaderboards.selectors import DEFAULT_EVAL_DATASETS
from leaderboards.services import build_round_datasets
from models_registry.models import RegisteredModel
from tasks.models import Task

from .examples import card_test_datasets, model_rows, split_examples, texts_of, training_examples
from .natural import mix_natural
from .placement import register_trained_target, train_into_place
from .planning import Progress, TargetTrainingError, plan_training, say


def card_description(
    *,
    backbone: str,
    pooling: str,
    recipe: str,
    task_name: str,
    rounds: Sequence[int],
    natural: dict | None = None,
) -> str:
    """The model card's one-line description of a classifier this project trained.

    Args:
        backbone: the encoder's name (e.g. ``sentence-transformers/all-MiniLM-L6-v2``).
        pooling: the model's ``config.pooling``: ``"mean"`` (one mean-pooled vector of the input) or
            ``"pair"`` (premise and hypothesis encoded separately, head on ``(u, v, |u-v|, u*v)``;
            ``engine.runtime.modeling``, after Conneau et al. 2017 and Reimers & Gurevych 2019).
        recipe: the training recipe ("quick" or "finetune").
        task_name / rounds: what it was trained on.
        natural: the card's ``training.natural`` (``natural.NaturalMix.as_card``), when natural data
            was mixed in.

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
    text = f"{backbone} with {head}, {recipe} recipe, trained on {task_name} round(s) {', '.join(map(str, rounds))}"
    if natural and natural.get("n"):
        text += (
            f" with natural data: {natural['n']:,} texts of {natural['name']} "
            f"({100 * natural['share']:.0f}% of the training set)"
        )
    return text + "."


def train_classifier_target(
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
    """Train a classifier on the rounds' training splits, register it and optionally make it a target
    (``targets.train_target_for_rounds`` calls it for a task with a label target).

    Data: training = ``training_examples`` of the rounds; model selection on their dev split
    (``split="dev"``). Only settled ``validated_correct`` examples count. Test accuracy is not measured
    here: the rounds' datasets are built (``services.build_round_datasets``, idempotent), the card lists
    in ``test_datasets`` each round's test split and each dataset of ``eval_datasets`` that the task has
    (HateCheck by default; ``examples.card_test_datasets``), and the leaderboard's evaluation of the
    model on them, which runs once for every ready model anyway, gives the figures
    (``selectors.card_test_figures``, shown on the model page and by ``manage.py train_target_model``).

    The model is written to ``settings.DYNABENCH_MODEL_DIR / task.slug / name``. A name that is already
    taken (a registered model of the task, or an existing directory) is refused unless ``replace``; with
    ``replace`` the directory is replaced atomically and this process's cached classifier of that path is
    dropped. It is registered with ``register_local_model`` (idempotent on the name) with a model card
    holding backbone, preprocessing, rounds and sizes, parameter count, dev accuracy, the test datasets,
    recipe and seed. With ``target_round`` it becomes that round's only target model. A target trained on its
    own round's training split (the case of round 1, which has no earlier round) is marked as such in
    the card (``trained_on_target_round``).

    Args:
        rounds: round numbers whose examples to train on.
        recipe: "quick" or "finetune" (see ``engine.training.classifier``).
        name: registered model name; default ``default_model_name(rounds, recipe)``. It must match
            ``MODEL_NAME_RE`` (it is also the directory name).
        backbone: ``"minilm"`` (all-MiniLM-L6-v2, default) or ``"mpnet"`` (all-mpnet-base-v2, opt-in,
            single-text tasks; ``engine.runtime.backbones``). Recorded on the card.
        backbone_path: encoder directory used instead of ``backbone``'s (tests pass a tiny one).
        natural / natural_share: a natural dataset of the task (``natural.natural_datasets``) and the
            share of the training set its texts make up (``natural.mix_natural``, drawn with ``seed``);
            the card's ``training.natural`` and description say what was mixed in. Dev and test data
            stay the rounds' own.
        progress: called with one line before each long step and after each result.
        replace: re-train a model whose name is taken, replacing its directory and updating its
            registry row (the demo re-training a model whose directory was deleted). Other processes
            that already loaded the old weights keep them until they restart.

    Returns:
        The registered model (status ``ready``, or ``failed`` with its error message).

    Raises:
        TargetTrainingError: an invalid name, a name already taken (without ``replace``), a round that
            does not exist, no training examples, a single class, a backbone that is unknown, not
            installed or fails its checksum, a natural dataset that is unknown or not natural, a share
            outside [0, 0.9], or a training failure.
    """
    # Imported here, not at the top: it loads torch, which the admin and the web pages never need.
    from models_registry.serving import train_classifier

    plan = plan_training(
        task,
        rounds,
        recipe=recipe,
        name=name,
        target_round=target_round,
        replace=replace,
        backbone=backbone,
        natural_share=natural_share if natural else 0.0,
    )
    numbers, name, round_objs = plan.numbers, plan.name, plan.rounds
    labels = task.cfg.labels
    if not labels:
        raise TargetTrainingError(
            f"task {task.slug} has no labels: only classification tasks can be trained here"
        )

    train = texts_of(task, model_rows(training_examples(task, round_objs)))
    dev = texts_of(task, model_rows(split_examples(task, round_objs, Example.Split.DEV)))
    if not len(train):
        raise TargetTrainingError(
            f"no validated training examples in round(s) {numbers} of {task.slug} "
            "(import them with: python manage.py import_hate_data, import_sentiment_data or import_nli_data)"
        )
    mixed = None
    if natural:
        train, mixed = mix_natural(task, train, dataset=natural, share=natural_share, seed=seed)
        say(progress, f"natural data: {mixed.n} texts of {mixed.name} ({100 * mixed.share:.0f}% of training)")
    per_round = {
        str(r.number): {
            "train": training_examples(task, [r]).count(),
            "dev": split_examples(task, [r], Example.Split.DEV).count(),
            "test": split_examples(task, [r], Example.Split.TEST).count(),
        }
        for r in round_objs
    }
    say(progress, f"training on rounds {numbers}: {len(train)} train, {len(dev)} dev examples ({recipe})")

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
            backbone=backbone,
            backbone_path=backbone_path,
            progress=progress,
        ),
        replace=replace,
    )

    # The rounds' datasets (idempotent): their test splits are where the leaderboard measures the model.
    for r in round_objs:
        build_round_datasets(r)
    on_own_round = target_round is not None and target_round in numbers
    card = {
        "description": card_description(
            backbone=result.details["backbone"],
            pooling=result.details.get("pooling", "mean"),
            recipe=recipe,
            task_name=task.name,
            rounds=numbers,
            natural=mixed.as_card() if mixed else None,
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
            "natural": mixed.as_card() if mixed else None,
            "seconds": result.seconds,
            **{k: v for k, v in result.details.items() if k not in ("backbone", "preprocessing", "seed")},
        },
        "parameter_count": result.parameter_count,
        "dev_accuracy": result.dev_accuracy,
        # Test figures are not measured here: the leaderboard evaluates the model on these datasets
        # (once each) and the model page reads them from its Scores (``selectors.card_test_figures``).
        "test_datasets": card_test_datasets(task, round_objs, eval_datasets),
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
