"""A pairwise judge checked for position bias: its verdicts in both orders combined, its flip rate, its
agreement with people's votes, and the rank correlation of its ranking with people's.

Pure functions (no Django). A judge model asked "which answer is better, the first or the second?"
often prefers a position: shown (A, B) it says A, shown (B, A) it says B again (the second). Arena-Hard-Auto
(Li et al. 2024, "From Crowdsourced Data to High-Quality Benchmarks: Arena-Hard and BenchBuilder Pipeline")
and MT-Bench (Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", section 3.3)
judge every pair in both orders and count an inconsistent pair as a tie; that is done here.

For a battle between models a and b:

* ``first``: the judge's preference shown a first; ``second``: shown b first, mapped back to a and b;
  each ``"a"``, ``"b"`` or ``"tie"`` (None when its reply could not be read);
* **the judge's vote** (``combine``): the preference when both orders give the same one, else ``"tie"``
  (a flip: the preference followed the position); None unless both orders were read;
* **flip rate** = flips / battles judged in both orders, with its Wilson 95% interval;
* **agreement with people** = battles where the judge's vote equals people's / battles with both (people's
  "both bad" counts as a tie, as in the Bradley-Terry fit), with its Wilson 95% interval;
* **rank correlation**: Kendall's tau-b between the Bradley-Terry scores fitted on the judge's votes and on
  people's votes of the same battles (``core.pairwise.fit_bradley_terry``, ``core.rank_correlation``), over
  the models in them; Arena-Hard-Auto reports its judges this way against Chatbot Arena.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .intervals import wilson_interval
from .pairwise import Vote, fit_bradley_terry
from .rank_correlation import kendall_tau

__all__ = ["PairwiseJudgeFigures", "combine", "pairwise_judge_figures", "unswap"]

PREFERENCES = ("a", "b", "tie")


def unswap(preference: str | None) -> str | None:
    """A preference given with b shown first, in terms of a and b: the first shown ("a" in the reply)
    was b."""
    return {"a": "b", "b": "a", "tie": "tie"}.get(preference) if preference is not None else None


def combine(first: str | None, second: str | None) -> str | None:
    """The judge's vote from its two orders (module docstring): the common preference, ``"tie"`` on a
    flip, None unless both were read.

    Raises:
        ValueError: a preference that is not "a", "b", "tie" or None.
    """
    for value in (first, second):
        if value is not None and value not in PREFERENCES:
            raise ValueError(f"a preference is one of {PREFERENCES}, not {value!r}")
    if first is None or second is None:
        return None
    return first if first == second else "tie"


@dataclass(frozen=True)
class PairwiseJudgeFigures:
    """A pairwise judge's figures (module docstring); rates in [0, 1], None without any battle."""

    judged: int
    flips: int
    flip_rate: float | None
    flip_interval: tuple[float, float] | None
    compared: int
    agreeing: int
    agreement: float | None
    agreement_interval: tuple[float, float] | None
    models: int
    rank_correlation: float | None

    def as_dict(self) -> dict:
        return {
            "judged_both_orders": self.judged,
            "flips": self.flips,
            "flip_rate": self.flip_rate,
            "flip_interval": list(self.flip_interval) if self.flip_interval else None,
            "compared_with_people": self.compared,
            "agreeing": self.agreeing,
            "agreement": self.agreement,
            "agreement_interval": list(self.agreement_interval) if self.agreement_interval else None,
            "models_ranked": self.models,
            "rank_correlation": self.rank_correlation,
        }


def _people(vote: str | None) -> str | None:
    return "tie" if vote == "both_bad" else vote if vote in PREFERENCES else None


def pairwise_judge_figures(
    orders: Mapping[int, tuple[str | None, str | None]],
    battles: Mapping[int, tuple[object, object, str | None]],
) -> PairwiseJudgeFigures:
    """The figures of a pairwise judge.

    Args:
        orders: battle id -> (preference shown a first, preference shown b first, already unswapped).
        battles: battle id -> (model a, model b, people's vote: "a", "b", "tie", "both_bad" or None).

    Raises:
        ValueError: a preference or a vote outside the allowed values, or a battle of ``orders`` missing
            from ``battles``.
    """
    judged = flips = compared = agreeing = 0
    judge_votes, people_votes = [], []
    for battle_id, (first, second) in orders.items():
        vote = combine(first, second)
        if vote is None:
            continue
        if battle_id not in battles:
            raise ValueError(f"battle {battle_id} is not among the battles")
        judged += 1
        flips += first != second
        a, b, people = battles[battle_id]
        if people is not None and people not in (*PREFERENCES, "both_bad"):
            raise ValueError(f"people's vote {people!r} is not one of a, b, tie, both_bad")
        people = _people(people)
        if people is None:
            continue
        compared += 1
        agreeing += vote == people
        judge_votes.append(Vote(a, b, vote))
        people_votes.append(Vote(a, b, people))
    tau, models = None, 0
    if judge_votes:
        judge_scores, people_scores = fit_bradley_terry(judge_votes), fit_bradley_terry(people_votes)
        keys = sorted(set(judge_scores) & set(people_scores), key=str)
        models = len(keys)
        tau = kendall_tau([judge_scores[k] for k in keys], [people_scores[k] for k in keys])
    return PairwiseJudgeFigures(
        judged=judged,
        flips=flips,
        flip_rate=flips / judged if judged else None,
        flip_interval=wilson_interval(flips, judged) if judged else None,
        compared=compared,
        agreeing=agreeing,
        agreement=agreeing / compared if compared else None,
        agreement_interval=wilson_interval(agreeing, compared) if compared else None,
        models=models,
        rank_correlation=tau,
    )
