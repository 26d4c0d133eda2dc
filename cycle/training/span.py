"""Train, measure and register a span (extractive QA) target on a task's rounds: the QA counterpart of
``classifier.train_classifier_target``; ``targets.train_target_for_rounds`` chooses between them.

Data: the rounds' settled ``validated_correct`` examples (``examples.training_examples`` /
``split_examples``): each gives the passage (its context's ``context_field``), the question (the task's
input field) and the answer span; an imported SQuAD example also has every reference answer
(``target["answers"]``), used when scoring. Dev F1/EM choose nothing (one run); they are measured on at
most ``MAX_DEV_QUESTIONS`` dev questions (a seeded sample) to keep the quick recipe quick. Test F1/EM are
not measured here: the leaderboard's evaluation of the model on each round's test split (for SQuAD, the
held-apart articles) gives them, once (``selectors.card_test_figures``; the card lists the datasets in
``test_datasets``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from django.utils import timezone

from annotation.models import Example
from cycle.kinds import rules_for
from leaderboards.services import build_round_datasets
from models_registry.models import RegisteredModel
from tasks.models import Task

from .examples import card_test_datasets, split_examples, training_examples
from .placement import register_trained_target, train_into_place
from .planning import Progress, TargetTrainingError, plan_training, say

MAX_DEV_QUESTIONS = 300


def qa_items(task: Task, examples) -> tuple[list, list[str]]:
    """``(QAItem list, skipped reasons)`` for span examples: passage from the context, question, answer.

    An example without a context, a question or an answer at its offset is skipped with its id.
    """
    from models_registry.serving import QAItem

    cfg = task.cfg
    passage_field = cfg.target_field["context_field"]
    question_field = cfg.input_fields[0]["name"]
    items, skipped = [], []
    for example in examples.select_related("context").order_by("pk"):
        passage = (example.context.data if example.context_id else {}).get(passage_field)
        question = example.inputs.get(question_field)
        target = example.target if isinstance(example.target, dict) else {}
        answer, start = target.get("answer"), target.get("answer_start")
        if (
            not isinstance(passage, str)
            or not isinstance(question, str)
            or not isinstance(answer, str)
            or not isinstance(start, int)
            or passage[start : start + len(answer)] != answer
        ):
            skipped.append(f"example {example.pk}: no passage, question or answer at its offset")
            continue
        references = tuple(
            a["text"] if isinstance(a, dict) else str(a) for a in target.get("answers") or [] if a
        )
        items.append(QAItem(question, passage, answer, start, references or (answer,)))
    return items, skipped


def train_qa_target_for_rounds(
    *,
    task: Task,
    rounds: Sequence[int],
    recipe: str = "quick",
    name: str | None = None,
    target_round: int | None = None,
    seed: int = 0,
    backbone_path: str | Path | None = None,
    owner=None,
    progress: Progress | None = None,
    replace: bool = False,
    overrides: dict | None = None,
) -> RegisteredModel:
    """Train a span model on the rounds' training splits, register it, optionally make it a round's
    target. Same naming, directory, replacement and card rules as ``classifier.train_classifier_target``.

    The card holds dev SQuAD F1 / EM (fractions), the test datasets (``test_datasets``: each round's
    test split, whose leaderboard evaluation gives the test F1 / EM), the recipe and its settings, sizes
    and training time.

    Raises:
        TargetTrainingError: a bad or taken name, a missing round, no usable training example, a span
            task without a context field, or a training failure.
    """
    # Imported here, not at the top (as in the two functions above): engine.training.qa loads torch.
    from models_registry.serving import QA_RECIPES as RECIPES
    from models_registry.serving import train_qa_model

    if not rules_for(task.cfg).span_answers:
        raise TargetTrainingError(f"task {task.slug} has no span target: train a classifier instead")
    if recipe not in RECIPES:
        raise TargetTrainingError(f"unknown recipe {recipe!r}; choose one of {list(RECIPES)}")
    plan = plan_training(task, rounds, recipe=recipe, name=name, target_round=target_round, replace=replace)
    numbers, name, round_objs = plan.numbers, plan.name, plan.rounds

    train, skipped = qa_items(task, training_examples(task, round_objs))
    dev, dev_skipped = qa_items(task, split_examples(task, round_objs, Example.Split.DEV))
    if not train:
        raise TargetTrainingError(
            f"no validated training examples in round(s) {numbers} of {task.slug} "
            "(import them with: python manage.py import_qa_data)"
        )
    if len(dev) > MAX_DEV_QUESTIONS:
        dev = random.Random(seed).sample(dev, MAX_DEV_QUESTIONS)
    say(progress, f"training a span model on rounds {numbers}: {len(train)} train, {len(dev)} dev ({recipe})")

    result, final_dir = train_into_place(
        task,
        name,
        lambda work_dir: train_qa_model(
            train_items=train,
            dev_items=dev,
            output_dir=work_dir,
            recipe=recipe,
            seed=seed,
            backbone_path=backbone_path,
            overrides=overrides,
            progress=progress,
        ),
        replace=replace,
    )

    # The rounds' datasets (idempotent): their test splits are where the leaderboard measures the model.
    for r in round_objs:
        build_round_datasets(r)
    on_own_round = target_round is not None and target_round in numbers
    card = {
        "description": (
            f"{result.details['backbone']} with a start/end span head (BertForQuestionAnswering), "
            f"{recipe} recipe, trained on {task.name} round(s) {', '.join(map(str, numbers))}. "
            "Answers are decoded from the tokenizer's offset mapping, in code points of the passage."
        ),
        "backbone": result.details["backbone"],
        "recipe": recipe,
        "seed": seed,
        "training": {
            "rounds": numbers,
            "n_train": result.n_train,
            "n_train_windows": result.n_features,
            "n_dev": result.n_dev,
            "skipped": skipped + dev_skipped,
            "seconds": result.seconds,
            **{k: v for k, v in result.details.items() if k not in ("backbone", "seed")},
        },
        "parameter_count": result.parameter_count,
        "dev": {"f1": result.dev_f1, "exact_match": result.dev_exact_match, "n": result.n_dev},
        # Test F1 / EM are not measured here: the leaderboard evaluates the model on these datasets
        # (once each) and the model page reads them from its Scores (``selectors.card_test_figures``).
        "test_datasets": card_test_datasets(task, round_objs),
        "trained_at": timezone.now().isoformat(timespec="seconds"),
        "licence": task.config.get("licence", ""),
    }
    if target_round is not None:
        card["target_round"] = target_round
        card["trained_on_target_round"] = on_own_round
        if on_own_round:
            card["note"] = (
                f"Target of round {target_round} trained on round {target_round}'s own training split "
                "(its test split is other articles, never seen in training)."
            )
    return register_trained_target(
        task=task, plan=plan, path=final_dir, card=card, owner=owner, progress=progress
    )
