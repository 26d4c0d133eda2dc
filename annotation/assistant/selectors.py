"""Reads of the annotation-assistant study: each arm's figures in a round, with 95% intervals across
people and a test of each arm against the first (docs/domain.md, "Annotation assistants").

Per person assigned to the round (``ArmAssignment``), over their examples written here (not imported,
not retracted): examples, those with a model verdict (``scored``), model-fooling ones (``fooled``),
model-fooling ones validators confirmed (``validated``), hours spent writing (the sum of the examples'
``time_taken_ms``: from the form shown to the example sent), and suggestions shown and taken. Per arm,
ratios of sums over its people:

* **examples per hour** = examples with a recorded time / hours; **validated examples per hour** =
  validated ones with a recorded time / hours (the create page records each example's time; the API's
  carry none, so they count in the rates but not per hour; intervals: the studentized cluster bootstrap
  of a ratio, ``core.clustered.clustered_ratio_interval``);
* **MER** = fooled / scored, **validated MER** = validated / scored, **share of suggestions kept** =
  suggestions taken by an example / suggestions shown (intervals: ``core.clustered.clustered_rates``);
* each figure of each arm against the first arm of the config (normally the arm without an assistant):
  the difference and its permutation test over people (``core.arm_comparison``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Q, Sum

from core.arm_comparison import Difference, permutation_test, ratio_of_sums
from core.clustered import clustered_rates, clustered_ratio_interval
from tasks.models import Round

from ..models import ArmAssignment, Example, Suggestion
from .arms import arms_of

#: The figures, in display order: (key, label, numerator, denominator, is a rate in [0, 1]).
FIGURES = (
    ("examples_per_hour", "Examples per hour", "timed", "hours", False),
    ("mer", "MER", "fooled", "scored", True),
    ("vmer", "Validated MER", "validated", "scored", True),
    ("validated_per_hour", "Validated examples per hour", "validated_timed", "hours", False),
    ("kept_share", "Share of suggestions kept", "taken", "shown", True),
)
COLUMNS = ("examples", "scored", "fooled", "validated", "timed", "validated_timed", "hours", "shown", "taken")


@dataclass(frozen=True)
class Figure:
    """One figure of one arm: ``value`` (None without a denominator), its 95% ``interval`` across the
    arm's people (None with fewer than 5 of them, or no spread), and against the first arm
    (``versus_first``: None for the first arm itself)."""

    key: str
    label: str
    value: float | None
    interval: tuple[float, float] | None
    versus_first: Difference | None = None


@dataclass(frozen=True)
class ArmStats:
    """One arm's figures in one round: its people, sums and ``figures`` (``FIGURES`` order)."""

    name: str
    has_assistant: bool
    people: int
    totals: dict[str, float]
    figures: list[Figure] = field(default_factory=list)


def _people(round_: Round, worker_ids) -> dict[int, dict[str, float]]:
    """Per assigned person (``worker_ids``, user ids): their sums in ``COLUMNS`` (zeros for a person with
    no example yet)."""
    rows = {worker_id: dict.fromkeys(COLUMNS, 0.0) for worker_id in worker_ids}
    examples = (
        Example.objects.filter(round=round_, source=Example.Source.CREATED, is_retracted=False)
        .values("annotator_id")
        .annotate(
            examples=Count("pk"),
            scored=Count("pk", filter=Q(model_wrong__isnull=False)),
            fooled=Count("pk", filter=Q(model_wrong=True)),
            validated=Count("pk", filter=Q(model_wrong=True, status=Example.Status.VALIDATED_CORRECT)),
            timed=Count("pk", filter=Q(time_taken_ms__isnull=False)),
            validated_timed=Count(
                "pk",
                filter=Q(
                    model_wrong=True, status=Example.Status.VALIDATED_CORRECT, time_taken_ms__isnull=False
                ),
            ),
            ms=Sum("time_taken_ms"),
        )
    )
    for row in examples:
        if row["annotator_id"] in rows:
            person = rows[row["annotator_id"]]
            for key in ("examples", "scored", "fooled", "validated", "timed", "validated_timed"):
                person[key] = float(row[key])
            person["hours"] = (row["ms"] or 0) / 3_600_000
    suggestions = (
        Suggestion.objects.filter(round=round_)
        .values("worker_id")
        .annotate(shown=Count("pk"), taken=Count("pk", filter=Q(example__isnull=False)))
    )
    for row in suggestions:
        if row["worker_id"] in rows:
            rows[row["worker_id"]]["shown"] = float(row["shown"])
            rows[row["worker_id"]]["taken"] = float(row["taken"])
    return rows


def _interval(numerators: list[float], denominators: list[float], is_rate: bool):
    if not denominators or not sum(denominators):
        return None
    if is_rate:
        return clustered_rates([[v] for v in numerators], [[v] for v in denominators])[0].interval
    return clustered_ratio_interval(numerators, denominators)


def arm_stats(round_: Round) -> list[ArmStats]:
    """The figures of every arm of ``round_``'s study, in config order (arms no longer in the config but
    holding people after them); [] for a task without assistant arms."""
    arms = arms_of(round_.task.cfg)
    if not arms:
        return []
    assignments = list(ArmAssignment.objects.filter(round=round_).values_list("worker_id", "arm"))
    people = _people(round_, [worker_id for worker_id, _ in assignments])
    by_arm: dict[str, list[dict[str, float]]] = defaultdict(list)
    for worker_id, arm in assignments:
        by_arm[arm].append(people[worker_id])
    names = [arm.name for arm in arms] + sorted(set(by_arm) - {arm.name for arm in arms})
    assistant = {arm.name: arm.has_assistant for arm in arms}
    first = by_arm.get(names[0], [])
    out = []
    for name in names:
        members = by_arm.get(name, [])
        figures = []
        for key, label, top, bottom, is_rate in FIGURES:
            if key == "kept_share" and not assistant.get(name, False):
                continue
            y, n = [p[top] for p in members], [p[bottom] for p in members]
            versus = None
            if name != names[0] and key != "kept_share":
                versus = permutation_test(
                    [p[top] for p in first], [p[bottom] for p in first], y, n, seed=len(out)
                )
            figures.append(Figure(key, label, ratio_of_sums(y, n), _interval(y, n, is_rate), versus))
        totals = {column: sum(p[column] for p in members) for column in COLUMNS}
        out.append(ArmStats(name, assistant.get(name, False), len(members), totals, figures))
    return out


def arm_stats_as_json(stats: list[ArmStats]) -> list[dict]:
    """``arm_stats`` as the API gives it: per arm ``{"arm", "assistant", "people", "totals", "figures":
    {key: {"value", "interval", "versus_first": {"difference", "p_value"} | null}}}``."""
    return [
        {
            "arm": arm.name,
            "assistant": arm.has_assistant,
            "people": arm.people,
            "totals": {k: round(v, 6) for k, v in arm.totals.items()},
            "figures": {
                f.key: {
                    "value": f.value,
                    "interval": list(f.interval) if f.interval is not None else None,
                    "versus_first": None
                    if f.versus_first is None
                    else {"difference": f.versus_first.difference, "p_value": f.versus_first.p_value},
                }
                for f in arm.figures
            },
        }
        for arm in stats
    ]


def task_page_section(request, task):
    """The task page's "Annotation assistant study" (``tasks.page_sections``), for the task's owners: the
    current round's figures per arm (``arm_stats``); None for anyone else, a task without arms, or a
    round nobody has joined yet."""
    from tasks.page_sections import PageSection

    round_ = task.current_round
    if round_ is None or not arms_of(task.cfg) or not task.is_owner(request.user):
        return None
    stats = arm_stats(round_)
    if not any(arm.people for arm in stats):
        return None
    return PageSection("annotation/assistant/_arms.html", {"arm_round": round_, "arm_stats": stats})
