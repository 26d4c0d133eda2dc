"""An uncertainty-mode round's statistics (``tasks.uncertainty``; docs/domain.md, "Uncertainty mode"):
how many examples made the target unsure, how many of those validators confirmed, and how sure the
target was across the round (a histogram of the measure).

Why here: the task page and the round API show them, and this app sits below annotation, so it reads the
examples through the round's reverse relation (``round_stats.examples_model()``), as ``red_team_stats``.

Definitions, per round, over the examples written here (not imported, not a rating example), not
retracted, whose unsure verdict is known (``model_unsure`` not None: every target answered):

* **examples**: those examples; **unsure**: those on which the target was unsure (the server's
  decision at submission); **validated unsure**: unsure examples that validators settled correct, i.e. a
  quorum of them, each giving the label without seeing the author's, agreed with it;
* **unsure rate** = unsure / examples (the MER's form); **validated unsure rate** = validated unsure /
  examples (the vMER's form), with a 95% interval across annotators (``core.clustered``: the studentized
  cluster bootstrap over people, one person's examples resampled together);
* **histogram**: the task's measure (top probability, a span's probability, or normalised entropy) of
  every target answer on those examples, in ``BINS`` equal bins of [0, 1] (the value 1 in the last).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from core.clustered import ClusteredRate, clustered_rates

from .models import Round, Task
from .round_stats import examples_model, not_collected_sources, rate

BINS = 10


@dataclass(frozen=True)
class UncertaintyStats:
    """One round's figures (module docstring). ``histogram``: ``BINS`` counts, bin i holding values in
    ``[i / BINS, (i + 1) / BINS)``; ``validated_interval``: the validated unsure rate with its interval
    across people (None with no example)."""

    round: Round
    examples: int = 0
    unsure: int = 0
    validated_unsure: int = 0
    histogram: tuple[int, ...] = (0,) * BINS
    validated: ClusteredRate | None = None

    @property
    def unsure_rate(self) -> float | None:
        """unsure / examples in [0, 1]; None with no example."""
        return rate(self.unsure, self.examples)

    @property
    def validated_unsure_rate(self) -> float | None:
        """validated unsure / examples in [0, 1]; None with no example."""
        return rate(self.validated_unsure, self.examples)

    @property
    def answers(self) -> int:
        """The target answers in the histogram."""
        return sum(self.histogram)


def bin_of(value: float, bins: int = BINS) -> int:
    """The histogram bin of ``value`` in [0, 1]: ``floor(value * bins)``, 1 in the last bin."""
    return min(bins - 1, max(0, int(value * bins)))


def uncertainty_stats(task: Task, rounds: Iterable[Round] | None = None) -> dict[int, UncertaintyStats]:
    """The figures of ``task``'s rounds, ``{round id: UncertaintyStats}``; ``{}`` for a task not in
    uncertainty mode. Two queries whatever the number of examples: the rounds (unless given) and one read
    of the examples' round, author, unsure verdict, status and their target answers' outputs."""
    goal = task.cfg.uncertainty
    if goal is None:
        return {}
    rounds = list(task.rounds.all() if rounds is None else rounds)
    Example = examples_model()
    rows = (
        Example.objects.filter(
            round_id__in=[r.pk for r in rounds], is_retracted=False, model_unsure__isnull=False
        )
        .exclude(source__in=not_collected_sources())
        .values_list("pk", "round_id", "annotator_id", "model_unsure", "status", "predictions__output")
    )
    seen: set[int] = set()
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    person: dict[int, dict[int | None, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    histogram: dict[int, list[int]] = defaultdict(lambda: [0] * BINS)
    for pk, round_id, annotator_id, unsure, status, output in rows.iterator():
        if output is not None:
            value = goal.value(output)
            if value is not None:
                histogram[round_id][bin_of(value)] += 1
        if pk in seen:  # one row per prediction
            continue
        seen.add(pk)
        validated = bool(unsure) and status == Example.Status.VALIDATED_CORRECT
        counts[round_id][0] += 1
        counts[round_id][1] += bool(unsure)
        counts[round_id][2] += validated
        person[round_id][annotator_id][0] += validated
        person[round_id][annotator_id][1] += 1
    out = {}
    for r in rounds:
        examples, unsure, validated = counts.get(r.pk, (0, 0, 0))
        clustered = None
        if examples:
            people = list(person[r.pk].values())
            (clustered,) = clustered_rates([[p[0]] for p in people], [[p[1]] for p in people])
        out[r.pk] = UncertaintyStats(
            round=r,
            examples=examples,
            unsure=unsure,
            validated_unsure=validated,
            histogram=tuple(histogram.get(r.pk, [0] * BINS)),
            validated=clustered,
        )
    return out
