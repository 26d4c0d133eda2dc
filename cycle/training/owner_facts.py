"""Reads behind the owner's admin forms that sit below this app: the facts of each candidate target on
the start-round pages (``models_registry.admin``, through ``ExtensibleAdmin.extension_context``) and
the settled examples each round adds on the "Train the next round's target" page.

Definitions: scores are the ``Score`` rows done (``perf`` in [0, 1], the task's perf metric); the rounds
that trained a model come from the training job that made it, else its card's ``training.rounds``, else
they are unknown (the order of ``cycle.releases.services.lineage``); "waiting for validation" is the
validation queue's rule (``validation.selectors.open_examples``); the training data of a round is
``training.examples.usable_examples`` split by ``services.split_of``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Count

from annotation.models import Example
from cycle.kinds import rules_for
from cycle.models import TrainingJob
from leaderboards.models import Score
from leaderboards.services import SPLITS, hash_split
from models_registry.models import RegisteredModel
from tasks.models import Round, Task
from validation.selectors import open_examples

from .examples import usable_examples


@dataclass(frozen=True)
class CandidateFacts:
    """What the start-round form shows of one candidate target: ``scores`` as ``(dataset name, perf)``
    pairs (perf in [0, 1]) by dataset name, ``trained_on`` the round numbers whose data trained it (None
    when unknown) and ``trained_on_source`` (``"training_job"``, ``"model_card"`` or ``"unknown"``)."""

    scores: list[tuple[str, float]] = field(default_factory=list)
    trained_on: list[int] | None = None
    trained_on_source: str = "unknown"


def candidate_facts(models: Sequence[RegisteredModel]) -> dict[int, CandidateFacts]:
    """Facts of ``models`` by model id, in two queries whatever their number (see ``CandidateFacts``)."""
    ids = [m.pk for m in models]
    scores: dict[int, list[tuple[str, float]]] = defaultdict(list)
    for model_id, name, perf in (
        Score.objects.filter(model_id__in=ids, status=Score.Status.DONE, perf__isnull=False)
        .order_by("dataset__name", "dataset_id")
        .values_list("model_id", "dataset__name", "perf")
    ):
        scores[model_id].append((name, perf))
    job_rounds: dict[int, list[int]] = {}
    for model_id, rounds in (
        TrainingJob.objects.filter(model_id__in=ids, status=TrainingJob.Status.DONE)
        .order_by("model_id", "-pk")
        .values_list("model_id", "rounds")
    ):
        job_rounds.setdefault(model_id, rounds)  # the latest done job of each model
    facts = {}
    for model in models:
        card_rounds = ((model.card or {}).get("training") or {}).get("rounds")
        if model.pk in job_rounds:
            trained, source = sorted(job_rounds[model.pk]), "training_job"
        elif isinstance(card_rounds, list):
            trained, source = sorted(card_rounds), "model_card"
        else:
            trained, source = None, "unknown"
        facts[model.pk] = CandidateFacts(scores[model.pk], trained, source)
    return facts


def waiting_for_validation(round_: Round | None) -> int:
    """Examples of ``round_`` still open for validation (0 for no round): one query."""
    return open_examples(round_).count() if round_ is not None else 0


@dataclass
class RoundTrainingData:
    """The examples one round adds to a training set: ``total`` settled ``validated_correct`` and not
    retracted examples (imported ones included), ``written`` of them written here, ``splits`` counts by
    split (train, dev, test) and ``train_labels`` the train split's counts by label (label targets only)."""

    number: int
    total: int = 0
    written: int = 0
    splits: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SPLITS, 0))
    train_labels: dict[str, int] = field(default_factory=dict)


def training_data_by_round(task: Task) -> list[RoundTrainingData]:
    """What each round of ``task`` adds to a target's training data, lowest round first, in three queries
    (the rounds; the examples with a split of their own, counted in the database; the ids of the others,
    whose split is hashed here as ``leaderboards.services.hash_split`` does)."""
    by_round = {
        n: RoundTrainingData(number=n)
        for n in Round.objects.filter(task=task).order_by("number").values_list("number", flat=True)
    }
    labelled = rules_for(task.cfg).labelled
    labels: dict[int, Counter] = defaultdict(Counter)
    usable = usable_examples(task, Round.objects.filter(task=task))
    extra = ["target"] if labelled else []
    rows: list[tuple] = []  # (round number, split, source, target or None, count)
    own = (
        usable.filter(split__in=SPLITS)
        .values_list("round__number", "split", "source", *extra)
        .annotate(n=Count("pk"))
        .order_by()
    )
    for number, split, source, *rest in own:
        target, n = (rest[0], rest[1]) if labelled else (None, rest[0])
        rows.append((number, split, source, target, n))
    hashed = usable.exclude(split__in=SPLITS).values_list("round__number", "pk", "source", *extra)
    for number, pk, source, *target in hashed.iterator(chunk_size=5000):
        rows.append((number, hash_split(pk), source, target[0] if target else None, 1))
    for number, split, source, target, n in rows:
        data = by_round[number]
        data.total += n
        data.splits[split] += n
        if source != Example.Source.IMPORTED:
            data.written += n
        if labelled and split == "train" and isinstance(target, str):
            labels[number][target] += n
    for number, counter in labels.items():
        order = {label: i for i, label in enumerate(task.cfg.labels)}
        by_round[number].train_labels = dict(sorted(counter.items(), key=lambda kv: order.get(kv[0], 99)))
    return list(by_round.values())
