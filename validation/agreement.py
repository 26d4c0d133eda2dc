"""Agreement per validator and per annotator in one round (docs/crowd.md, "Quality"), beside the round's
Krippendorff's alpha (``tasks.round_stats``, ``_agreements``), from the same units and coders.

Units and coders, as for the round's alpha: a unit is a collected example of the round (written here,
not retracted, not imported); its values are the ordinary verdicts on it (``correct``, ``incorrect``,
``flagged``), one per validator; owner verdicts are left out (they settle, they do not code). Gold
answers are never verdicts (``validation.gold``), so they are not in any of these figures.

Per validator V:
  * ``alpha``: Krippendorff's alpha (nominal, ``core.metrics.krippendorff_alpha_nominal``) over
    the units V voted on, with every validator's ordinary verdicts on those units (V's and the others');
  * ``agreement``: of V's ordinary verdicts on units now settled, the share whose verdict is the settled
    status (``correct`` ~ validated_correct, ``incorrect`` ~ validated_incorrect, ``flagged`` ~ flagged).
Per annotator A:
  * ``alpha``: the same alpha over the units that are A's examples;
  * ``correct_share``: of A's collected examples of the round now settled, the share validated correct.

Each alpha is None when it is not computable: no unit with two or more verdicts, or every verdict on
such units the same (no variation, alpha undefined). A share is None when its denominator is 0.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from annotation import selectors as annotation_selectors
from annotation.exports import pseudonym
from annotation.models import Example
from core.metrics import krippendorff_alpha_nominal
from tasks.models import Round

from .gold import selectors as gold_selectors
from .models import Validation
from .selectors import STATUS_OF_VERDICT


@dataclass(frozen=True)
class ValidatorAgreement:
    """One validator in one round: ``votes`` ordinary verdicts; ``coded_units`` the units they voted on
    that have two or more verdicts; ``alpha`` (module docstring); ``judged_settled`` their verdicts on
    settled units and ``agreeing`` those matching the settled status."""

    user_id: int
    votes: int
    coded_units: int
    alpha: float | None
    judged_settled: int
    agreeing: int

    @property
    def agreement(self) -> float | None:
        """``agreeing / judged_settled`` in [0, 1]; None when none of their verdicts is on a settled unit."""
        return self.agreeing / self.judged_settled if self.judged_settled else None


@dataclass(frozen=True)
class AnnotatorAgreement:
    """One annotator in one round: ``examples`` collected, ``settled`` of them, ``validated_correct`` of
    those; ``coded_units`` their examples with two or more verdicts; ``alpha`` (module docstring)."""

    user_id: int
    examples: int
    settled: int
    validated_correct: int
    coded_units: int
    alpha: float | None

    @property
    def correct_share(self) -> float | None:
        """``validated_correct / settled`` in [0, 1]; None when none of their examples is settled."""
        return self.validated_correct / self.settled if self.settled else None


@dataclass(frozen=True)
class RoundAgreement:
    """A round's alpha over all its units, and the per-validator and per-annotator figures (lists
    ordered by user id)."""

    round: Round
    alpha: float | None
    validators: list[ValidatorAgreement] = field(default_factory=list)
    annotators: list[AnnotatorAgreement] = field(default_factory=list)

    def pseudonym(self, user_id: int) -> str:
        """The person's export pseudonym in this round (``annotation.exports.pseudonym``)."""
        return pseudonym(self.round.pk, user_id)


def _alpha(units: dict[int, list[str]], ids) -> tuple[float | None, int]:
    chosen = [units[u] for u in ids if u in units]
    return krippendorff_alpha_nominal(chosen), sum(1 for values in chosen if len(values) >= 2)


def round_agreement(round_: Round) -> RoundAgreement:
    """Agreement in ``round_`` overall, per validator and per annotator (module docstring), in two
    queries: the ordinary verdicts on the round's collected examples, and the annotators' counts."""
    collected = annotation_selectors.collected_examples().filter(round=round_)
    verdicts = (
        Validation.objects.filter(example__in=collected, is_owner_verdict=False)
        .order_by()
        .values_list("example_id", "example__status", "validator_id", "verdict")
    )
    units: dict[int, list[str]] = defaultdict(list)
    units_of_validator: dict[int, set[int]] = defaultdict(set)
    settled_votes: dict[int, list[bool]] = defaultdict(list)
    for example_id, status, validator_id, verdict in verdicts.iterator(chunk_size=5000):
        units[example_id].append(verdict)
        units_of_validator[validator_id].add(example_id)
        if status != Example.Status.PENDING:
            settled_votes[validator_id].append(STATUS_OF_VERDICT[verdict] == status)

    validators = []
    for user_id in sorted(units_of_validator):
        alpha, coded = _alpha(units, units_of_validator[user_id])
        judged = settled_votes.get(user_id, [])
        validators.append(
            ValidatorAgreement(
                user_id=user_id,
                votes=len(units_of_validator[user_id]),
                coded_units=coded,
                alpha=alpha,
                judged_settled=len(judged),
                agreeing=sum(judged),
            )
        )

    examples_of: dict[int, list[tuple[int, str]]] = defaultdict(list)
    written = collected.filter(annotator__isnull=False).order_by().values_list("annotator_id", "pk", "status")
    for annotator_id, example_id, status in written.iterator(chunk_size=5000):
        examples_of[annotator_id].append((example_id, status))
    annotators = []
    for user_id in sorted(examples_of):
        mine = examples_of[user_id]
        alpha, coded = _alpha(units, [example_id for example_id, _ in mine])
        settled = [status for _, status in mine if status != Example.Status.PENDING]
        annotators.append(
            AnnotatorAgreement(
                user_id=user_id,
                examples=len(mine),
                settled=len(settled),
                validated_correct=settled.count(Example.Status.VALIDATED_CORRECT),
                coded_units=coded,
                alpha=alpha,
            )
        )
    return RoundAgreement(
        round=round_,
        alpha=krippendorff_alpha_nominal(units.values()),
        validators=validators,
        annotators=annotators,
    )


def round_quality(round_: Round) -> dict:
    """What the round's quality page and ``GET /api/tasks/{slug}/rounds/{n}/agreement/`` show, people
    as their export pseudonyms in the round: ``{"round": n, "alpha", "validators": [...],
    "annotators": [...]}``. A validator row has ``validator``, ``votes``, ``coded_units``, ``alpha``,
    ``judged_settled``, ``agreeing``, ``agreement`` and their gold record on the task (every round):
    ``gold_answered``, ``gold_correct``, ``gold_accuracy`` (None with no answer). An annotator row has
    ``annotator``, ``examples``, ``settled``, ``validated_correct``, ``correct_share``, ``coded_units``
    and ``alpha``. Rows are sorted by pseudonym (user ids would tell the order people joined).
    """
    agreement = round_agreement(round_)
    gold = {g.user_id: g for g in gold_selectors.gold_accuracy(round_.task)}
    validators = []
    for v in agreement.validators:
        g = gold.get(v.user_id)
        validators.append(
            {
                "validator": agreement.pseudonym(v.user_id),
                "votes": v.votes,
                "coded_units": v.coded_units,
                "alpha": v.alpha,
                "judged_settled": v.judged_settled,
                "agreeing": v.agreeing,
                "agreement": v.agreement,
                "gold_answered": g.answered if g else 0,
                "gold_correct": g.correct if g else 0,
                "gold_accuracy": g.accuracy if g else None,
            }
        )
    annotators = [
        {
            "annotator": agreement.pseudonym(a.user_id),
            "examples": a.examples,
            "settled": a.settled,
            "validated_correct": a.validated_correct,
            "correct_share": a.correct_share,
            "coded_units": a.coded_units,
            "alpha": a.alpha,
        }
        for a in agreement.annotators
    ]
    return {
        "round": round_.number,
        "alpha": agreement.alpha,
        "validators": sorted(validators, key=lambda row: row["validator"]),
        "annotators": sorted(annotators, key=lambda row: row["annotator"]),
    }
