"""Natural data beside adversarial data in a target's training set (the first mitigation the Dynabench
paper gives for adversarial data drifting from natural data; Kiela et al. 2021, section 4).

A natural dataset is a ``Dataset`` of the task whose ``metadata["natural"]`` is true, imported by
``cycle.natural_sets`` (e.g. SST-3 sentences for sentiment). A training request names
one and a share: the natural texts then make up that share of the training set, drawn with the
training seed from the texts not already in it. The model card records what was mixed in.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from leaderboards.models import Dataset
from tasks.models import Task

from .examples import LabelledTexts, texts_of
from .planning import TargetTrainingError

#: The largest share accepted: a training set of natural data only is not a round's target.
MAX_NATURAL_SHARE = 0.9


@dataclass(frozen=True)
class NaturalMix:
    """What a training set took from a natural dataset (the model card's ``training.natural``).

    Attributes:
        dataset / name: the natural dataset's slug and name.
        share_requested: the share asked for, in [0, ``MAX_NATURAL_SHARE``].
        share: the share of the training set the natural texts make up, ``n / (n + n_adversarial)``;
            below ``share_requested`` when the dataset has too few new texts.
        n / available: natural texts mixed in, and how many were eligible (labelled, not already in
            the training set).
        source / licence: the dataset's provenance, copied from it.
    """

    dataset: str
    name: str
    share_requested: float
    share: float
    n: int
    available: int
    source: str
    licence: str

    def as_card(self) -> dict:
        """JSON-ready values."""
        return asdict(self)


def natural_datasets(task: Task):
    """The task's natural datasets (``metadata["natural"]`` true), by name."""
    return Dataset.objects.filter(task=task, metadata__natural=True).order_by("name")


def natural_count(share: float, n_adversarial: int) -> int:
    """Natural texts to add so that they make up ``share`` of the training set.

    ``n / (n + a) = s`` gives ``n = s * a / (1 - s)``, rounded to the nearest integer; e.g. a share of
    0.25 beside 300 adversarial texts asks for 100.

    Raises:
        TargetTrainingError: ``share`` outside [0, ``MAX_NATURAL_SHARE``].
    """
    if not 0.0 <= share <= MAX_NATURAL_SHARE:
        raise TargetTrainingError(
            f"the natural-data share must be between 0 and {MAX_NATURAL_SHARE}, not {share}"
        )
    return round(share * n_adversarial / (1.0 - share))


def mix_natural(
    task: Task, train: LabelledTexts, *, dataset: str, share: float, seed: int
) -> tuple[LabelledTexts, NaturalMix]:
    """``train`` with natural texts of ``dataset`` added to make up ``share`` of it.

    The natural texts are the dataset's items with the task's input fields and a known label
    (``examples.texts_of``), minus those whose text is already in ``train``; ``natural_count`` of them
    are drawn with ``random.Random(seed)`` (all of them when fewer are eligible) and appended.

    Returns:
        The mixed training texts (a new object; ``train`` is unchanged) and what was mixed in.

    Raises:
        TargetTrainingError: an unknown dataset, one that is not marked natural, a share outside
            [0, ``MAX_NATURAL_SHARE``], or a dataset with no usable text.
    """
    wanted = natural_count(share, len(train))
    found = Dataset.objects.filter(task=task, slug=dataset).first()
    if found is None:
        raise TargetTrainingError(f"task {task.slug} has no dataset {dataset!r}")
    if not (found.metadata or {}).get("natural"):
        raise TargetTrainingError(
            f"dataset {dataset!r} is not marked as natural data (import one with manage.py import_natural_data)"
        )
    rows = found.items.order_by("pk").values_list("inputs", "target")
    natural = texts_of(task, list(rows))
    if not len(natural):
        raise TargetTrainingError(f"dataset {dataset!r} has no text with the task's inputs and labels")
    seen = set(train.texts)
    eligible = [(t, y) for t, y in zip(natural.texts, natural.labels, strict=True) if t not in seen]
    chosen = random.Random(seed).sample(eligible, min(wanted, len(eligible)))
    mixed = LabelledTexts(
        texts=train.texts + [t for t, _ in chosen],
        labels=train.labels + [y for _, y in chosen],
        skipped=train.skipped,
    )
    return mixed, NaturalMix(
        dataset=found.slug,
        name=found.name,
        share_requested=share,
        share=round(len(chosen) / len(mixed), 4) if len(mixed) else 0.0,
        n=len(chosen),
        available=len(eligible),
        source=found.source,
        licence=found.licence,
    )
