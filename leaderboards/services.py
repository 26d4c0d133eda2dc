"""Writes for datasets: round datasets from settled examples, perturbed copies for fairness/robustness.

Rules (also in ``docs/datasets.md``):

* **Round datasets** (``build_round_datasets``): a round's examples that are settled
  ``validated_correct`` and not retracted (imported ones included) form three datasets of the task,
  ``round-<n>-train`` (hidden), ``round-<n>-dev`` (standard) and ``round-<n>-test`` (**scoring**).
  An example keeps its own ``split`` when it has one (imported data); otherwise its split comes from
  ``hash_split(example.pk)``: the first 8 bytes of SHA-256 of the decimal id, modulo 10: 0-7 train,
  8 dev, 9 test (80/10/10). The rule depends on the id only, so an example never moves split when
  more arrive. Re-running adds the examples settled since (one item per example, ``external_id``
  ``example-<pk>``); it never duplicates nor removes items.
  A **red-teaming** round's datasets hold only its validated multiple-choice items
  (``metadata.mode == "multiple_choice"``; conversations are a person's judgement, not
  machine-scorable), all in ``round-<n>-test``: inputs ``{"messages", "options"}`` (``choice_inputs``),
  target the correct option's index (docs/generative.md, "Multiple choice").
* **Perturbed datasets** (``ensure_perturbed_dataset``): for a dataset and a perturbation kind
  (``robustness`` / ``fairness``), a dataset ``<slug>--<kind>`` of kind ``perturbed`` and access
  hidden, built from a seeded sample of at most ``PERTURBATION_SAMPLE`` source items (all of them
  when fewer); items the perturbation leaves unchanged are skipped. Each item keeps the source item's
  target and tags, ``metadata.source_item_id`` (the source ``DatasetItem`` pk) and the operation
  applied; the dataset's metadata names the source dataset, the perturbation, the seed and the
  sample size. It is rebuilt when the source dataset's item count changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction

from annotation.models import Example
from annotation.red_team.choice_items import choice_messages
from leaderboards.kinds import rules_for
from tasks.models import Round

from .models import Dataset, DatasetItem
from .perturbations import KINDS, perturb, sample_ids

PERTURBATION_SEED = 0
#: Items perturbed per dataset: enough for a stable consistency figure (a 95% interval of about
#: +-4 points at 0.5) while keeping the demo's evaluation of HateCheck (3,425 items) short.
PERTURBATION_SAMPLE = 500
BATCH_SIZE = 1000

SPLITS = ("train", "dev", "test")
#: The access of each split's round dataset: only test ranks models on the leaderboard.
SPLIT_ACCESS = {
    "train": Dataset.Access.HIDDEN,
    "dev": Dataset.Access.STANDARD,
    "test": Dataset.Access.SCORING,
}

Progress = Callable[[str], None]


def hash_split(example_id: int | str) -> str:
    """The split of an example that has none of its own: ``train`` (80%), ``dev`` (10%), ``test`` (10%).

    ``int.from_bytes(sha256(str(example_id))[:8]) % 10``: 0-7 train, 8 dev, 9 test.
    """
    bucket = int.from_bytes(hashlib.sha256(str(example_id).encode("ascii")).digest()[:8], "big") % 10
    if bucket < 8:
        return "train"
    return "dev" if bucket == 8 else "test"


def split_of(example: Example) -> str:
    """An example's own split if it has one (imported data), else ``hash_split(example.pk)``."""
    return example.split if example.split in SPLITS else hash_split(example.pk)


def round_dataset_slug(round_: Round, split: str) -> str:
    """E.g. ``round-1-test``."""
    return f"round-{round_.number}-{split}"


@dataclass
class RoundDatasets:
    """What ``build_round_datasets`` did: the three datasets by split and the items added to each."""

    datasets: dict[str, Dataset] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)


def _ensure_round_dataset(round_: Round, split: str) -> Dataset:
    if rules_for(round_.task.cfg).generative:
        description = (
            f"Round {round_.number}'s validated multiple-choice items (conversations are not "
            "machine-scorable); all of them score, by accuracy."
        )
        rule = "red-teaming: every validated multiple-choice item, in the test split"
    else:
        description = (
            f"Round {round_.number}'s settled validated-correct examples of the {split} split "
            "(own split when imported, else sha256 of the example id: 80/10/10)."
        )
        rule = "own split, else sha256(example id)[:8] % 10: 0-7 train, 8 dev, 9 test"
    dataset, _ = Dataset.objects.get_or_create(
        task=round_.task,
        slug=round_dataset_slug(round_, split),
        defaults={
            "name": f"Round {round_.number} {split}",
            "kind": Dataset.Kind.ROUND,
            "access": SPLIT_ACCESS[split],
            "round": round_,
            "split": split,
            "description": description,
            "metadata": {"split_rule": rule},
        },
    )
    return dataset


def choice_inputs(example: Example, round_: Round) -> dict:
    """A multiple-choice item as a dataset item's inputs: ``{"messages": [...], "options": [...]}``, the
    passage and the question as the target read them (``choice_items.choice_messages``) and the options
    in the order shown."""
    question = example.inputs.get("question", "")
    return {
        "messages": choice_messages(example.context, question, round_),
        "options": list(example.inputs.get("options", [])),
    }


def build_round_datasets(round_: Round, *, progress: Progress | None = None) -> RoundDatasets:
    """Create or extend the round's train / dev / test datasets from its settled examples.

    See the module docstring for the rule. One transaction; idempotent (an example already in a
    dataset of the round is not added again, whichever split it is in).

    A split's dataset is created with its first item (a round with no settled test example has no
    test dataset), so no model is ever evaluated on an empty dataset.

    Returns:
        ``RoundDatasets`` with the round's datasets by split (``train``, ``dev``, ``test``; a split
        with no items yet is absent) and how many items were added to each split.
    """
    report = RoundDatasets()
    with transaction.atomic():
        existing = {
            d.split: d
            for d in Dataset.objects.filter(
                task=round_.task, slug__in=[round_dataset_slug(round_, s) for s in SPLITS]
            )
        }
        present = set(
            DatasetItem.objects.filter(
                dataset__in=list(existing.values()), example__isnull=False
            ).values_list("example_id", flat=True)
        )
        red_team = rules_for(round_.task.cfg).generative
        examples = (
            Example.objects.filter(round=round_, status=Example.Status.VALIDATED_CORRECT, is_retracted=False)
            # A red-teaming round's machine-scorable items are its multiple-choice items (not its
            # conversations, whose judgement is a person's): all of them score (the test split).
            .filter(**({"metadata__mode": "multiple_choice"} if red_team else {}))
            .exclude(pk__in=present)
            .order_by("pk")
            .select_related("context")
            .only(
                "pk",
                "inputs",
                "target",
                "tags",
                "split",
                "source",
                "external_id",
                "metadata",
                "context__data",
            )
        )
        by_split: dict[str, list[Example]] = {s: [] for s in SPLITS}
        for example in examples.iterator(chunk_size=BATCH_SIZE):
            by_split["test" if red_team else split_of(example)].append(example)
        for split in SPLITS:
            report.added[split] = len(by_split[split])
            if split not in existing and not by_split[split]:
                continue  # no dataset without items: it is created with its first example
            dataset = existing.get(split) or _ensure_round_dataset(round_, split)
            report.datasets[split] = dataset
            DatasetItem.objects.bulk_create(
                [
                    DatasetItem(
                        dataset=dataset,
                        example=example,
                        external_id=f"example-{example.pk}",
                        # The model input: the context's fields (an NLI premise) with the example's.
                        inputs=choice_inputs(example, round_) if red_team else example.model_input,
                        target=example.target.get("answer") if red_team else example.target,
                        tags=list(example.tags or []),
                        metadata={
                            "round": round_.number,
                            "split": split,
                            "split_from": "red_team"
                            if red_team
                            else ("example" if example.split in SPLITS else "hash"),
                            "source": example.source,
                            "source_id": example.external_id,
                        },
                    )
                    for example in by_split[split]
                ],
                batch_size=BATCH_SIZE,
            )
    if progress is not None:
        added = ", ".join(f"{report.added[s]} {s}" for s in SPLITS)
        progress(f"Round {round_.number} datasets: added {added}")
    return report


def perturbed_slug(source: Dataset, kind: str) -> str:
    """``<source slug>--<kind>``, cut to the slug's 100 characters."""
    suffix = f"--{kind}"
    return source.slug[: 100 - len(suffix)] + suffix


def _perturbed_field(source: Dataset) -> str:
    # The model reads model_input_fields; the last one is the annotator's text (statement, hypothesis).
    return source.task.cfg.model_input_fields[-1]


def ensure_perturbed_dataset(
    source: Dataset, kind: str, *, seed: int = PERTURBATION_SEED, sample_size: int = PERTURBATION_SAMPLE
) -> Dataset:
    """The ``kind`` perturbed copy of ``source``, built or rebuilt if missing or out of date.

    Out of date: the source's item count, the seed or the sample size differs from the one recorded
    in its metadata. The source dataset's row is locked while checking and building, so two workers
    evaluating two models on the same dataset build it once.

    Args:
        source: a dataset that is not itself perturbed.
        kind: ``robustness`` or ``fairness``.

    Returns:
        The perturbed dataset (possibly with no items, when nothing in the sample could be perturbed).

    Raises:
        ValueError: for an unknown kind or a perturbed source.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown perturbation {kind!r}")
    if source.kind == Dataset.Kind.PERTURBED:
        raise ValueError(f"dataset {source.slug} is already a perturbed copy")
    with transaction.atomic():
        source = Dataset.objects.select_for_update().select_related("task").get(pk=source.pk)
        n_source = source.items.count()
        wanted = {
            "source_dataset_id": source.pk,
            "source_dataset": source.slug,
            "perturbation": kind,
            "seed": seed,
            "sample_size": sample_size,
            "source_items": n_source,
        }
        dataset, created = Dataset.objects.get_or_create(
            task=source.task,
            slug=perturbed_slug(source, kind),
            defaults={
                "name": f"{source.name} ({kind} perturbation)",
                "kind": Dataset.Kind.PERTURBED,
                "access": Dataset.Access.HIDDEN,
                "round": source.round,
                "split": source.split,
                "description": (
                    f"{kind.capitalize()} perturbation (seed {seed}) of a sample of at most {sample_size} "
                    f"items of {source.name}; items it left unchanged are skipped."
                ),
                "metadata": wanted,
            },
        )
        if not created and all(dataset.metadata.get(k) == v for k, v in wanted.items()):
            return dataset
        dataset.items.all().delete()
        field_name = _perturbed_field(source)
        rows = {
            ext: (pk, inputs, target, tags)
            for pk, ext, inputs, target, tags in source.items.values_list(
                "pk", "external_id", "inputs", "target", "tags"
            )
        }
        new = []
        for external_id in sample_ids(list(rows), sample_size, seed=seed):
            pk, inputs, target, tags = rows[external_id]
            text = inputs.get(field_name) if isinstance(inputs, dict) else None
            if not isinstance(text, str):
                continue
            result = perturb(text, kind, seed=seed, item_id=external_id)
            if not result.changed:
                continue
            new.append(
                DatasetItem(
                    dataset=dataset,
                    external_id=external_id,
                    inputs={**inputs, field_name: result.text},
                    target=target,
                    tags=tags,
                    metadata={"source_item_id": pk, "operation": result.operation},
                )
            )
        DatasetItem.objects.bulk_create(new, batch_size=BATCH_SIZE)
        wanted["items"] = len(new)
        Dataset.objects.filter(pk=dataset.pk).update(metadata=wanted)
        dataset.metadata = wanted
    return dataset
