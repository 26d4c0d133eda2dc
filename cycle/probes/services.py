"""Running a round's artefact probes and storing them (``ArtefactProbe``), and queueing that job.

``run_round_probes(round_=...)`` measures both probes (``measure_input_only``, ``measure_author``) on the
round's data (``data.round_texts``) and replaces the round's rows in one transaction: running it again
gives the same rows (the seed is fixed) for the same data, and new ones once more examples settled. The
measuring happens before the transaction, so no row is locked while the classifiers train.
``request_round_probes(round_id=...)`` queues ``jobs.run_artefact_probes_job`` once the caller's
transaction commits (``core.job_queue``: inline under ``Q_CLUSTER["sync"]``, else in the job cluster,
whose workers run at a low priority).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction

from core.job_queue import enqueue
from core.text_probe import FEATURES, SEED, TOP_FEATURES, NotMeasurable, cross_validated_accuracy, has_words
from cycle.kinds import GENERATIVE_PROBES_REASON, rules_for
from tasks.config import TaskConfig
from tasks.models import Round

from ..models import ArtefactProbe
from .data import NOT_GROUPED, RoundTexts, left_out_counts, round_texts

logger = logging.getLogger(__name__)

JOB = "cycle.probes.jobs.run_artefact_probes_job"
#: An author enters the annotator-identity probe with at least this many usable examples in the round.
MIN_AUTHOR_EXAMPLES = 5
#: Telling writers apart needs at least this many such authors.
MIN_AUTHORS = 2
#: At most this many authors (the most prolific; ties: the earlier account): the classifier's size
#: grows with the authors times the vocabulary.
MAX_AUTHORS = 50
MAX_ERROR = 2000

Kind = ArtefactProbe.Kind
Status = ArtefactProbe.Status

EMPTY = "empty text (no word or symbol)"


@dataclass
class Outcome:
    """One probe's result before it is stored: the fields of an ``ArtefactProbe`` row."""

    kind: str
    status: str
    accuracy: float | None = None
    chance: float | None = None
    n: int = 0
    n_classes: int = 0
    folds: int = 0
    details: dict = field(default_factory=dict)
    error: str = ""


def _not(kind: str, status: str, reason: str, details: dict) -> Outcome:
    return Outcome(kind=kind, status=status, details=details, error=reason)


def _figures_details(figures, details: dict) -> dict:
    return {
        **details,
        "interval": [round(figures.interval[0], 4), round(figures.interval[1], 4)],
        "fold_accuracies": [round(a, 4) for a in figures.fold_accuracies],
        "sampled_from": figures.sampled_from,
        "groups": figures.groups,
    }


def _groups(data: RoundTexts) -> list[str] | None:
    """The examples' group keys when the round's data declares groups or pairs (``data.example_groups``),
    else None (plain stratified folds)."""
    if data.grouped_by in ("", NOT_GROUPED) or len(data.groups) != len(data.written):
        return None
    return data.groups


def _grouping(data: RoundTexts) -> str:
    return data.grouped_by or NOT_GROUPED


def measure_input_only(cfg: TaskConfig, data: RoundTexts) -> Outcome:
    """The input-only baseline: the label predicted from ``data.baseline`` alone (the hypothesis of a
    pair, else the statement). Not applicable to red-teaming tasks and to tasks whose target is not a
    label (QA spans); not measurable with fewer than two labels, or a label with a single example.
    ``details.classes`` gives the examples per label, ``details.top_features`` the words that most
    predict each label."""
    kind = Kind.INPUT_ONLY
    details = {
        "fields": list(data.baseline_fields),
        "features": FEATURES,
        "seed": SEED,
        "pending": data.pending,
        "folds_grouped_by": _grouping(data),
    }
    reason = rules_for(cfg).input_only_not_applicable
    if reason or not data.baseline_fields:
        return _not(
            kind, Status.NOT_APPLICABLE, reason or "not applicable: the target is not a label", details
        )
    texts, labels, left_out = [], [], []
    all_groups = _groups(data)
    groups: list[str] | None = [] if all_groups is not None else None
    for index, (text, label) in enumerate(zip(data.baseline, data.labels, strict=True)):
        if label is None:
            left_out.append("label not one of the task's labels")
        elif not has_words(text):
            left_out.append(EMPTY)
        else:
            texts.append(text)
            labels.append(label)
            if groups is not None:
                groups.append(all_groups[index])
    details["left_out"] = left_out_counts(left_out)
    if not texts:
        return _not(
            kind,
            Status.NOT_MEASURABLE,
            "not measurable: the round has no validated example with a label and a text to probe",
            details,
        )
    try:
        figures = cross_validated_accuracy(
            texts, labels, what="label", top_features=TOP_FEATURES, groups=groups
        )
    except NotMeasurable as exc:
        details["classes"] = dict(sorted(Counter(labels).items()))
        return Outcome(
            kind=kind,
            status=Status.NOT_MEASURABLE,
            n=len(texts),
            n_classes=len(set(labels)),
            details=details,
            error=f"not measurable: {exc}",
        )
    details = _figures_details(figures, details)
    details["classes"] = figures.classes
    details["top_features"] = figures.top_features
    return Outcome(
        kind=kind,
        status=Status.DONE,
        accuracy=figures.accuracy,
        chance=figures.chance,
        n=figures.n,
        n_classes=figures.n_classes,
        folds=figures.folds,
        details=details,
    )


def measure_author(cfg: TaskConfig, data: RoundTexts) -> Outcome:
    """The annotator-identity probe (Geva et al. 2019): the author predicted from what they wrote (every
    input field). Over the authors with at least ``MIN_AUTHOR_EXAMPLES`` usable examples (at most
    ``MAX_AUTHORS``, the most prolific); not measurable with fewer than ``MIN_AUTHORS`` of them. Imported
    examples have no author and are left out. No author is named in the result: ``details`` gives the
    number of authors (``authors_total``, ``authors``) and the examples per kept author, largest first."""
    kind = Kind.AUTHOR
    details = {
        "fields": [f["name"] for f in cfg.input_fields],
        "features": FEATURES,
        "seed": SEED,
        "pending": data.pending,
        "min_examples_per_author": MIN_AUTHOR_EXAMPLES,
        "folds_grouped_by": _grouping(data),
    }
    if rules_for(cfg).generative:
        return _not(kind, Status.NOT_APPLICABLE, GENERATIVE_PROBES_REASON, details)
    left_out = []
    candidates = []
    all_groups = _groups(data)
    for index, (text, author) in enumerate(zip(data.written, data.authors, strict=True)):
        if author is None:
            left_out.append("no known author (imported)")
        elif not has_words(text):
            left_out.append(EMPTY)
        else:
            candidates.append((text, author, all_groups[index] if all_groups is not None else ""))
    per_author = Counter(author for _, author, _ in candidates)
    eligible = sorted(
        (a for a, count in per_author.items() if count >= MIN_AUTHOR_EXAMPLES),
        key=lambda a: (-per_author[a], a),
    )
    kept = set(eligible[:MAX_AUTHORS])
    texts, authors, groups = [], [], []
    for text, author, group in candidates:
        if author in kept:
            texts.append(text)
            authors.append(str(author))
            groups.append(group)
        elif per_author[author] < MIN_AUTHOR_EXAMPLES:
            left_out.append(f"author with fewer than {MIN_AUTHOR_EXAMPLES} examples")
        else:
            left_out.append(f"beyond the {MAX_AUTHORS} most prolific authors")
    details["left_out"] = left_out_counts(left_out)
    details["authors_total"] = len(per_author)
    details["authors"] = len(kept)
    details["examples_per_author"] = sorted((per_author[a] for a in kept), reverse=True)
    if len(kept) < MIN_AUTHORS:
        return Outcome(
            kind=kind,
            status=Status.NOT_MEASURABLE,
            n=len(texts),
            n_classes=len(kept),
            details=details,
            error=(
                f"not measurable: {len(kept)} of the round's {len(per_author)} known author(s) wrote at "
                f"least {MIN_AUTHOR_EXAMPLES} validated examples; telling writers apart needs at least "
                f"{MIN_AUTHORS}"
            ),
        )
    try:
        figures = cross_validated_accuracy(
            texts, authors, what="author", groups=groups if all_groups is not None else None
        )
    except NotMeasurable as exc:  # not reached with MIN_AUTHOR_EXAMPLES >= 2, kept for safety
        return _not(kind, Status.NOT_MEASURABLE, f"not measurable: {exc}", details)
    return Outcome(
        kind=kind,
        status=Status.DONE,
        accuracy=figures.accuracy,
        chance=figures.chance,
        n=figures.n,
        n_classes=figures.n_classes,
        folds=figures.folds,
        details=_figures_details(figures, details),
    )


def _safely(kind: str, measure, cfg: TaskConfig, data: RoundTexts) -> Outcome:
    try:
        return measure(cfg, data)
    except Exception as exc:  # noqa: BLE001 - one probe's crash must not lose the other, nor the job
        logger.exception("artefact probe %s failed", kind)
        return Outcome(kind=kind, status=Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR])


def run_round_probes(*, round_: Round) -> list[ArtefactProbe]:
    """Measure ``round_``'s artefact probes and store them, replacing its earlier ones (idempotent).

    A probe that crashes is stored as ``failed`` with its error; the other is still measured.

    Returns:
        The round's new rows, input-only first.

    Raises:
        django.db.DatabaseError: the rows could not be stored (the earlier ones are kept then).
    """
    cfg = round_.task.cfg
    data = round_texts(round_)
    outcomes = [
        _safely(Kind.INPUT_ONLY, measure_input_only, cfg, data),
        _safely(Kind.AUTHOR, measure_author, cfg, data),
    ]
    with transaction.atomic():
        # Two runs for one round at once (the close and an owner's request): each replaces the rows
        # under the round's lock, so the round ends with one complete set, never a mix.
        Round.objects.select_for_update().filter(pk=round_.pk).first()
        ArtefactProbe.objects.filter(round=round_).delete()
        return ArtefactProbe.objects.bulk_create(
            [
                ArtefactProbe(
                    round=round_,
                    kind=o.kind,
                    status=o.status,
                    accuracy=o.accuracy,
                    chance=o.chance,
                    n=o.n,
                    n_classes=o.n_classes,
                    folds=o.folds,
                    details=o.details,
                    error=o.error,
                )
                for o in outcomes
            ]
        )


def request_round_probes(*, round_id: int) -> None:
    """Queue the artefact probes of round ``round_id`` once the caller's transaction commits (at once
    outside one). The job reads the committed examples; a rolled-back close queues nothing."""
    transaction.on_commit(lambda: enqueue(JOB, round_id, task_name=f"artefact-probes-round-{round_id}"))
