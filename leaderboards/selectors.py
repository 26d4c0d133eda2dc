"""Reads for the leaderboard and model pages: visible models, scoring datasets, the computed table.

Visibility (docs/domain.md, "Visibility"): a published model is visible to everyone; an unpublished
one only to its owner, the task's owners and superusers. An anonymous model is shown to everyone else
as "Anonymous model N" (N: its position among the task's anonymous models by id, so it does not move
when others are published). Hidden datasets are not shown to non-owners; only scoring datasets are
ranked.

``build_leaderboard`` returns a plain, JSON-ready dict (also what a snapshot stores), so the live page
and a frozen snapshot are rendered by the same template.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet
from django.urls import reverse

from annotation.models import Turn
from generative_bench.models import ReplayAnswer
from models_registry.models import RegisteredModel
from models_registry.runtime_facts import runtime_key, runtime_label, served_runtime_text
from models_registry.selectors import anonymous_numbers, display_name, models_visible_to, sees_real_identity
from tasks.models import Task

from .dynascore import (
    DEFAULT_MEMORY_CEILING_GIB,
    DEFAULT_METRIC_WEIGHTS,
    PERF,
    compute_dynascore,
    measured_spreads,
)
from .fairness_flags import cell_flags, ranks_without_flagged, round_agreement
from .kinds import rules_for
from .models import Dataset, LeaderboardFork, LeaderboardSnapshot, Score

BASE_METRICS = ("perf", "throughput", "memory")
METRIC_LABELS = {
    "perf": "Perf",
    "throughput": "Throughput (examples/s)",
    "memory": "Memory (GiB)",
    "fairness": "Fairness",
    "robustness": "Robustness",
}


#: Metrics that cannot be measured for a kind of model (``RegisteredModel.source``), with the reason
#: shown in its row. A remote endpoint's memory lives on a machine we cannot see: the evaluation stores
#: ``memory = None`` for it, and no value is invented. Following docs/domain.md, "Dynascore" ("a model
#: missing a score is shown as incomplete, never silently dropped"; dynascore.py "Missing scores"), such
#: a model has no Dynascore while memory counts (weight > 0 and AMRS defined); with the memory weight at
#: 0 it has one.
NOT_MEASURABLE = {
    RegisteredModel.Source.ENDPOINT: {"memory": "memory not measurable for remote endpoints"},
    RegisteredModel.Source.CHAT_ENDPOINT: {"memory": "memory not measurable for remote chat servers"},
}


def not_measurable(model: RegisteredModel) -> dict[str, str]:
    """Metric -> why it cannot be measured for ``model`` (empty for models whose weights run here)."""
    return NOT_MEASURABLE.get(model.source, {})


@dataclass
class LeaderboardParams:
    """What the viewer asked for, already validated (``leaderboards.forms.parse_leaderboard_query``).

    ``dataset_weights`` maps dataset id -> weight for every dataset shown; ``messages`` lists what was
    wrong in the query and replaced by a default.
    """

    metric_weights: dict[str, float]
    dataset_weights: dict[int, float]
    sort: str = "dynascore"
    direction: str = "desc"
    round_number: int | None = None
    messages: list[str] = field(default_factory=list)


def is_task_owner(user, task: Task) -> bool:
    """True for the task's owners and superusers."""
    return task.is_owner(user)


def leaderboard_metrics(task: Task) -> list[str]:
    """The metrics of the task's leaderboard: perf, throughput, memory, then the config's delta metrics."""
    return list(BASE_METRICS) + [m for m in task.cfg.raw.get("delta_metrics", []) if m not in BASE_METRICS]


def default_metric_weights(task: Task) -> dict[str, float]:
    """The task config's ``default_metric_weights`` for each leaderboard metric (else the defaults of
    docs/domain.md, "Dynascore": perf 4, the others 1)."""
    configured = task.cfg.raw.get("default_metric_weights") or {}
    return {
        m: float(configured.get(m, DEFAULT_METRIC_WEIGHTS.get(m, 1.0))) for m in leaderboard_metrics(task)
    }


def memory_ceiling(task: Task) -> float:
    """M in GiB: the config's ``memory_ceiling_gib``, default 16."""
    return float(task.cfg.raw.get("memory_ceiling_gib", DEFAULT_MEMORY_CEILING_GIB))


def rounds_with_scoring_datasets(task: Task) -> list[int]:
    """Round numbers that have at least one scoring dataset, ascending."""
    return sorted(
        set(
            Dataset.objects.filter(task=task, access=Dataset.Access.SCORING, round__isnull=False)
            .exclude(kind=Dataset.Kind.PERTURBED)
            .values_list("round__number", flat=True)
        )
    )


def scoring_datasets(task: Task, round_number: int | None = None) -> list[Dataset]:
    """The task's scoring datasets (all, or only round ``round_number``'s), by round then name.

    Perturbed copies are never ranked (their consistency is already the fairness / robustness metric).
    """
    qs = (
        Dataset.objects.filter(task=task, access=Dataset.Access.SCORING)
        .exclude(kind=Dataset.Kind.PERTURBED)
        .select_related("round")
    )
    if round_number is not None:
        qs = qs.filter(round__number=round_number)
    return list(qs.order_by("round__number", "name", "id"))


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def score_values(score: Score, metrics: list[str]) -> dict[str, float | None]:
    """``{metric: value}`` of a done ``Score`` for ``metrics`` (``perf`` from the row, the others from
    its ``metrics``), None where a value is missing or not a finite number; the input of
    ``dynascore.compute_dynascore`` and of the page's live re-ranking (``live_ranking``)."""
    values = {}
    for j in metrics:
        values[j] = _number(score.perf) if j == PERF else _number((score.metrics or {}).get(j))
    return values


def ranked_models(models):
    """The models of ``models`` (a queryset) that have a leaderboard row: the ready ones. A ready model
    checked again stays ready (and keeps its row) until its check ends (``models_registry.services.
    check_again``); a failed check drops it."""
    return models.filter(status=RegisteredModel.Status.READY)


def build_leaderboard(
    task: Task, user, params: LeaderboardParams, *, fork: LeaderboardFork | None = None
) -> dict:
    """The leaderboard table as ``user`` sees it, with ``params``' weights, sort and round.

    Returns a JSON-ready dict: ``metrics`` (names and labels), ``datasets`` (id, name, round, weight,
    normalised weight), ``rows`` (one per visible ready model, sorted as asked: name, model_id, url,
    dynascore, rank, complete, missing, per-metric aggregated value in the metric's unit ``metrics``,
    x' ``x``, per-dataset perf ``datasets``, Score status ``statuses``, ``not_measurable`` (metric ->
    reason, ``NOT_MEASURABLE``), ``notes`` (sentences shown under the model's name), ``flags`` (dataset
    id -> ``fairness_flags`` kinds) and ``rank_without_flagged``), ``flagged`` (any cell flagged),
    ``kendall_tau`` (per pair of rounds:
    ``rounds``, ``tau``, ``n``), ``amrs``, ``reference`` (the metric the AMRS are measured against,
    ``dynascore``'s "Reference metric"), ``left_out``,
    ``metric_weights`` (as given and normalised), ``sort``, ``dir``, ``round``, ``memory_ceiling``.
    A model with no score at all is still a row (incomplete, no Dynascore). With no scoring dataset
    the rows carry no figures and ``error`` says why.
    """
    metrics = leaderboard_metrics(task)
    datasets = scoring_datasets(task, params.round_number)
    models = list(ranked_models(models_visible_to(user, task)).order_by("pk"))
    numbers = anonymous_numbers(task)
    owns_task = task.is_owner(user)
    scores = Score.objects.filter(model__in=models, dataset__in=datasets)
    values: dict[int, dict[Hashable, dict[str, float | None]]] = {m.pk: {} for m in models}
    statuses: dict[int, dict[str, str]] = {m.pk: {} for m in models}
    spreads: dict[int, dict[Hashable, dict[str, float]]] = {m.pk: {} for m in models}
    for s in scores:
        statuses[s.model_id][str(s.dataset_id)] = s.status
        if s.status == Score.Status.DONE:
            values[s.model_id][s.dataset_id] = score_values(s, metrics)
            spreads[s.model_id][s.dataset_id] = measured_spreads(s.metrics)  # the noise guard's

    ceiling = memory_ceiling(task)
    weights = {d.pk: params.dataset_weights.get(d.pk, 1.0) for d in datasets}
    table: dict = {
        "task": task.slug,
        "task_name": task.name,
        "round": params.round_number,
        "fork": fork.slug if fork else None,
        "metrics": [{"name": j, "label": METRIC_LABELS.get(j, j.title())} for j in metrics],
        "perf_metric": task.cfg.perf_metric,
        "memory_ceiling": ceiling,
        "metric_weights": {j: params.metric_weights.get(j, 0.0) for j in metrics},
        "sort": params.sort,
        "dir": params.direction,
        "amrs": {},
        "reference": PERF,
        "left_out": {},
        "pairs_used": {},
        "error": "",
    }
    result = None
    if datasets:
        result = compute_dynascore(
            values,
            dataset_weights=weights,
            metric_weights=table["metric_weights"],
            memory_ceiling=ceiling,
            metrics=metrics,
            spreads=spreads,
        )
        table["amrs"] = result.amrs
        table["reference"] = result.reference
        table["left_out"] = result.left_out
        table["pairs_used"] = result.pairs_used
        table["normalised_metric_weights"] = result.metric_weights
    else:
        table["error"] = (
            f"Round {params.round_number} has no scoring dataset."
            if params.round_number is not None
            else "This task has no scoring dataset yet."
        )
        table["normalised_metric_weights"] = {}
    total = sum(weights.values()) or 1.0
    names = {d.pk: d.name for d in datasets}
    table["datasets"] = [
        {
            "id": d.pk,
            "name": d.name,
            "round": d.round.number if d.round_id else None,
            "weight": weights[d.pk],
            "normalised": weights[d.pk] / total,
        }
        for d in datasets
    ]

    by_key = result.by_key() if result else {}
    # Cells built against a model, its rank without them, and how far rounds agree (fairness_flags).
    flags = cell_flags(models, datasets)
    fair_ranks = (
        ranks_without_flagged(
            values,
            datasets,
            flags,
            dataset_weights=weights,
            metric_weights=table["metric_weights"],
            memory_ceiling=ceiling,
            metrics=metrics,
            spreads=spreads,
        )
        if datasets
        else {}
    )
    table["flagged"] = bool(flags)
    table["kendall_tau"] = [a.as_dict() for a in round_agreement(values, datasets)]
    rows = []
    for m in models:
        r = by_key.get(m.pk)
        per_dataset = {str(d.pk): (values[m.pk].get(d.pk) or {}).get(PERF) for d in datasets}
        unmeasurable = not_measurable(m)
        # A metric that cannot be measured is not a missing score: the row says why instead.
        missing = [(d, j) for d, j in r.missing if j not in unmeasurable] if r else []
        notes = _not_measurable_notes(unmeasurable, r, table) if r else []
        rows.append(
            {
                "model_id": m.pk,
                "name": display_name(user, m, numbers, owns_task),
                "anonymous": m.is_anonymous,
                "masked": not sees_real_identity(user, m, owns_task),
                "published": m.is_published,
                # A runtime is part of the submitted system, like its size (docs/onnx.md).
                "runtime": runtime_key(m),
                "runtime_label": runtime_label(m, short=True),
                "runtime_text": served_runtime_text(m),
                "url": reverse("leaderboards:model", args=[m.pk]),
                "dynascore": r.dynascore if r else None,
                "rank": r.rank if r else None,
                "complete": not missing if r else False,
                "missing": sorted({names.get(d, str(d)) for d, _ in missing}),
                "not_measurable": unmeasurable,
                "notes": notes,
                "metrics": r.raw if r else {j: None for j in metrics},
                # The timed passes' aggregated spread per measured metric (throughput), in its unit;
                # only where every Score measured one (an old Score's stand-in 5% is not a measurement).
                "spread": _shown_spreads(r, values[m.pk], spreads[m.pk]),
                "x": r.x if r else {j: None for j in metrics},
                "datasets": per_dataset,
                "statuses": statuses[m.pk],
                "flags": {str(d): kinds for d, kinds in flags.get(m.pk, {}).items()},
                # A model with no flag keeps its rank; a flagged one its rank without its flagged rounds.
                "rank_without_flagged": fair_ranks.get(m.pk)
                if m.pk in fair_ranks
                else (r.rank if r else None),
            }
        )
    table["rows"] = sort_rows(rows, params.sort, params.direction)
    return table


def _shown_spreads(result, values: dict, spreads: dict) -> dict[str, float]:
    """``result.spread`` (``dynascore.ModelResult``) for the metrics whose spread every one of the
    model's done Scores measured; {} without a result. ``live_ranking.js`` applies the same rule."""
    if result is None:
        return {}
    return {
        metric: u
        for metric, u in result.spread.items()
        if u is not None and values and all(metric in spreads.get(d, {}) for d in values)
    }


def _not_measurable_notes(unmeasurable: dict[str, str], result, table: dict) -> list[str]:
    """One sentence per metric the model cannot have, saying what it does to its Dynascore."""
    notes = []
    for metric, reason in unmeasurable.items():
        if result.x.get(metric) is not None:
            continue  # measured after all (e.g. a figure stored by hand): nothing to explain
        counts = table["metric_weights"].get(metric, 0) > 0 and metric not in table["left_out"]
        if counts and result.dynascore is None:
            notes.append(
                f"{reason.capitalize()}: no Dynascore while {metric} counts; set the {metric} weight "
                "to 0 to rank it."
            )
        else:
            notes.append(f"{reason.capitalize()}; {metric} does not count in this view's Dynascore.")
    return notes


def sort_rows(rows: list[dict], column: str, direction: str) -> list[dict]:
    """Rows sorted by ``column`` (``dynascore``, ``model``, a metric name or ``d<dataset id>``).

    Missing values (None) come last in either direction; equal values keep Dynascore rank order, then
    model id. Memory is sorted by its value in GiB (``asc``: least memory first).
    """
    reverse_ = direction == "desc"

    def value(row):
        if column == "dynascore":
            return row["dynascore"]
        if column == "model":
            return row["name"].casefold()
        if column.startswith("d") and column[1:].isdigit():
            return row["datasets"].get(column[1:])
        return row["metrics"].get(column)

    base = sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["model_id"]))
    present = [r for r in base if value(r) is not None]
    absent = [r for r in base if value(r) is None]
    return sorted(present, key=value, reverse=reverse_) + absent


def forks_of(task: Task) -> QuerySet[LeaderboardFork]:
    """The task's saved weight sets, by name."""
    return LeaderboardFork.objects.filter(task=task).order_by("name")


def fork_of(task: Task, slug: str) -> LeaderboardFork:
    """The fork ``slug`` of ``task``. Raises ``LeaderboardFork.DoesNotExist``."""
    return LeaderboardFork.objects.get(task=task, slug=slug)


def snapshots_of(task: Task) -> QuerySet[LeaderboardSnapshot]:
    """The task's frozen snapshots, newest first (without their data)."""
    return LeaderboardSnapshot.objects.filter(task=task).defer("data").order_by("-created_at", "-id")


def snapshot_of(task: Task, pk) -> LeaderboardSnapshot:
    """Snapshot ``pk`` of ``task``. Raises ``LeaderboardSnapshot.DoesNotExist`` (also for a bad id)."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise LeaderboardSnapshot.DoesNotExist from None
    return LeaderboardSnapshot.objects.get(task=task, pk=pk)


def datasets_visible_to(user) -> QuerySet[Dataset]:
    """Datasets ``user`` may see: every one that is not hidden, and the hidden ones (round train splits)
    of tasks they own; superusers see all. The one rule for the API's dataset list and a model's scores."""
    if user.is_authenticated and user.is_superuser:
        return Dataset.objects.all()
    visible = ~Q(access=Dataset.Access.HIDDEN)
    if user.is_authenticated:
        visible |= Q(task__in=Task.objects.filter(owners=user))
    return Dataset.objects.filter(visible)


def model_scores(user, model: RegisteredModel) -> list[Score]:
    """The model's scores on datasets ``user`` may see (``datasets_visible_to``), by dataset."""
    qs = Score.objects.filter(model=model, dataset__in=datasets_visible_to(user)).select_related(
        "dataset", "dataset__round"
    )
    return list(qs.order_by("dataset__access", "dataset__round__number", "dataset__name"))


HATECHECK_SLUG = "hatecheck"
#: The datasets (by slug) besides its rounds' test splits whose evaluation gives the test figures of a target
#: trained here (``card_test_figures``), when the task has them.
DEFAULT_EVAL_DATASETS = (HATECHECK_SLUG,)


def card_eval_datasets(task: Task) -> list[Dataset]:
    """The datasets, besides the chosen rounds' test splits, on which a target trained here is measured
    for its model card: those of ``DEFAULT_EVAL_DATASETS`` (HateCheck) that ``task``
    has. A span task (extractive QA) is measured on its test splits only. By slug order of that list."""
    if rules_for(task.cfg).span_answers:
        return []
    found = {d.slug: d for d in Dataset.objects.filter(task=task, slug__in=DEFAULT_EVAL_DATASETS)}
    return [found[slug] for slug in DEFAULT_EVAL_DATASETS if slug in found]


#: The figures of a done Score that a model card shows as its test figures, with their card label:
#: accuracy for a label task, SQuAD F1 and exact match for a span task.
CARD_TEST_METRICS = (("accuracy", "test accuracy"), ("f1", "test f1"), ("exact_match", "test exact match"))


def card_test_figures(model: RegisteredModel) -> dict[str, dict]:
    """A trained target's test figures, read from the leaderboard's Scores (training does not measure them).

    Which datasets: the slugs in ``model.card["test_datasets"]`` (``training.examples.card_test_datasets``:
    its training rounds' test splits, then HateCheck when the task has it); a card without that list
    gives ``{}``. Only done Scores count; a dataset not built or not evaluated yet is absent.

    Returns:
        ``{slug: {"dataset": name, "n": items, metric: value, ...}}`` in the card's order, where the
        metrics are those of ``CARD_TEST_METRICS`` the Score holds (fractions in [0, 1]):
        e.g. ``{"round-1-test": {"dataset": "Round 1 test", "n": 300, "accuracy": 0.64}}``.
    """
    slugs = (model.card or {}).get("test_datasets")
    if not isinstance(slugs, list) or not slugs:
        return {}
    done = {
        s.dataset.slug: s
        for s in Score.objects.filter(
            model=model, dataset__task_id=model.task_id, dataset__slug__in=slugs, status=Score.Status.DONE
        ).select_related("dataset")
    }
    figures: dict[str, dict] = {}
    for slug in slugs:
        score = done.get(slug)
        if score is None:
            continue
        metrics = score.metrics if isinstance(score.metrics, dict) else {}
        entry = {"dataset": score.dataset.name, "n": metrics.get("n")}
        entry.update(
            {key: metrics[key] for key, _ in CARD_TEST_METRICS if isinstance(metrics.get(key), int | float)}
        )
        figures[slug] = entry
    return figures


def auto_eval_datasets(task: Task) -> list[Dataset]:
    """The task's datasets every ready model is evaluated on once registered (``evaluable_datasets``:
    scoring and standard, not perturbed or hidden), those with at least one item, by name."""
    return list(evaluable_datasets([task.pk]).filter(items__isnull=False).distinct().order_by("name", "pk"))


def evaluable_datasets(task_ids: Sequence[int] | None = None, *, include_hidden: bool = False):
    """Datasets models are evaluated on automatically: scoring and standard ones, so that every ready
    model has a score on each of them (docs/datasets.md, "Evaluation"), never the perturbed copies
    (read while evaluating their source dataset).

    Hidden datasets (the round train splits: most of the examples, ranked nowhere) are left out of the
    automatic evaluations; they cost the demo a third of its evaluation time for figures only owners
    would see. ``include_hidden=True`` is for an owner's explicit request (``manage.py evaluate
    --dataset SLUG``).
    """
    datasets = Dataset.objects.exclude(kind=Dataset.Kind.PERTURBED)
    if not include_hidden:
        datasets = datasets.exclude(access=Dataset.Access.HIDDEN)
    return datasets if task_ids is None else datasets.filter(task_id__in=list(task_ids))


def latest_provenance(model: RegisteredModel) -> dict | None:
    """The provenance of ``model``'s latest stored answer (``Generation.provenance``: weights, tokenizer
    and chat template digests and library versions, or a remote server's model and fingerprint), from its
    red-teaming turns, else its replayed answers; None when it has none (not a generative model, or no
    answer stored since answers record it). Two queries at most."""
    for rows in (
        # A turn's model is its own (a side-by-side answer), else its conversation's.
        Turn.objects.filter(Q(model=model) | Q(model__isnull=True, conversation__model=model)).exclude(
            generation__provenance={}
        ),
        ReplayAnswer.objects.filter(replay__model=model).exclude(generation__provenance={}),
    ):
        found = (
            rows.filter(generation__has_key="provenance")
            .order_by("-updated_at", "-pk")
            .values_list("generation", flat=True)
            .first()
        )
        if found and isinstance(found.get("provenance"), dict):
            return found["provenance"]
    return None
