"""A red-teaming round's statistics: attack success rate, per failure category and per number of turns,
the cost of the conversations, and the multiple-choice items apart (docs/generative.md, "Attack success
rate").

Examples are the annotation app's table, above this one: read through the round's reverse relation
(``Round.examples``), as ``tasks.round_stats`` does, so the task page and the round API here can show them.

Definitions, per round, over its examples written here and not retracted:

* **attempts**: the conversations judged by their authors (an abandoned conversation is not one);
* **claimed failures**: attempts whose author's rubric says failed (``model_wrong``);
* **verified failures**: claimed failures that validators confirmed (``validated_correct``);
* **attack success rate** = verified failures / attempts: the generative form of the vMER (Kiela et al.
  2021), the attack success rate of red-teaming (Perez et al. 2022, "Red Teaming Language Models with
  Language Models"); the **claimed rate** = claimed failures / attempts is the MER's;
* **per category**: verified failures tagged with the category / attempts (a failure with two
  categories counts in both, so the rates may sum to more than the attack success rate);
* **per number of turns**: verified failures / attempts among the conversations of that many turns;
* **cost**: the sum of the conversations' answer costs (in the currency of the target's prices), the
  number of conversations whose cost is unknown (a model without prices or a server without usage), and
  cost per verified failure = known cost / verified failures (None with none).

Multiple-choice items are counted apart: items written, items that fooled the target (its pick was
wrong), items validated correct, and their MER = fooled / written.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .models import Round, Task
from .round_stats import examples_model, rate


@dataclass(frozen=True)
class Rate:
    """``verified`` of ``attempts``; ``rate`` their quotient, None with no attempt."""

    key: str
    label: str
    attempts: int
    verified: int

    @property
    def rate(self) -> float | None:
        return rate(self.verified, self.attempts)


@dataclass(frozen=True)
class RedTeamStats:
    """One red-teaming round's figures (the module's definitions). Costs are floats in the currency of
    the target's prices; None when unknown or undefined."""

    round: Round
    attempts: int = 0
    claimed: int = 0
    verified: int = 0
    by_category: tuple[Rate, ...] = ()
    by_turns: tuple[Rate, ...] = ()
    cost: float | None = None
    cost_unknown: int = 0
    items: int = 0
    items_fooled: int = 0
    items_validated: int = 0

    @property
    def attack_success_rate(self) -> float | None:
        return rate(self.verified, self.attempts)

    @property
    def claimed_rate(self) -> float | None:
        return rate(self.claimed, self.attempts)

    @property
    def cost_per_verified(self) -> float | None:
        if self.cost is None or not self.verified:
            return None
        return self.cost / self.verified

    @property
    def item_mer(self) -> float | None:
        return rate(self.items_fooled, self.items)

    def as_dict(self) -> dict:
        """The figures as the round API gives them (``red_team`` of a round's statistics)."""

        def rates(rows):
            return [
                {
                    "key": r.key,
                    "label": r.label,
                    "attempts": r.attempts,
                    "verified": r.verified,
                    "rate": r.rate,
                }
                for r in rows
            ]

        return {
            "attempts": self.attempts,
            "claimed_failures": self.claimed,
            "verified_failures": self.verified,
            "attack_success_rate": self.attack_success_rate,
            "claimed_rate": self.claimed_rate,
            "by_category": rates(self.by_category),
            "by_turns": rates(self.by_turns),
            "cost": self.cost,
            "cost_unknown": self.cost_unknown,
            "cost_per_verified_failure": self.cost_per_verified,
            "multiple_choice": {
                "items": self.items,
                "fooled": self.items_fooled,
                "validated_correct": self.items_validated,
                "mer": self.item_mer,
            },
        }


def red_team_stats(task: Task) -> dict[int, RedTeamStats]:
    """Every round of the red-teaming ``task`` by round id (one query for all the rounds' examples);
    empty for another task."""
    if not task.cfg.is_red_team:
        return {}
    Example = examples_model()
    rounds = {r.pk: r for r in task.rounds.all()}
    rows = (
        Example.objects.filter(round__task=task, is_retracted=False)
        .exclude(source=Example.Source.IMPORTED)
        .values_list("round_id", "model_wrong", "status", "tags", "metadata")
    )
    labels = {c["name"]: c.get("label", c["name"]) for c in task.cfg.failure_categories}
    acc: dict[int, dict] = defaultdict(
        lambda: {
            "attempts": 0,
            "claimed": 0,
            "verified": 0,
            "cost": 0.0,
            "known": 0,
            "unknown": 0,
            "category": defaultdict(int),
            "turns": defaultdict(lambda: [0, 0]),
            "items": 0,
            "items_fooled": 0,
            "items_validated": 0,
        }
    )
    for round_id, model_wrong, status, tags, metadata in rows:
        a = acc[round_id]
        metadata = metadata or {}
        validated = status == Example.Status.VALIDATED_CORRECT
        mode = metadata.get("mode")
        if mode == "multiple_choice":
            a["items"] += 1
            a["items_fooled"] += model_wrong is True
            a["items_validated"] += validated
            continue
        if mode != "conversation":
            continue
        verified = model_wrong is True and validated
        a["attempts"] += 1
        a["claimed"] += model_wrong is True
        a["verified"] += verified
        turns = metadata.get("turns")
        if isinstance(turns, int):
            a["turns"][turns][0] += 1
            a["turns"][turns][1] += verified
        if verified:
            for tag in set(tags or []):
                a["category"][tag] += 1
        cost = metadata.get("cost")
        if isinstance(cost, (int, float)):
            a["cost"] += cost
            a["known"] += 1
        else:
            a["unknown"] += 1
    stats = {}
    for round_id, round_ in rounds.items():
        a = acc.get(round_id)
        if a is None:
            stats[round_id] = RedTeamStats(round=round_)
            continue
        names = list(labels) + sorted(set(a["category"]) - set(labels))
        stats[round_id] = RedTeamStats(
            round=round_,
            attempts=a["attempts"],
            claimed=a["claimed"],
            verified=a["verified"],
            by_category=tuple(
                Rate(name, labels.get(name, name), a["attempts"], a["category"].get(name, 0))
                for name in names
            ),
            by_turns=tuple(
                Rate(str(t), f"{t} turn{'s' if t != 1 else ''}", n, v)
                for t, (n, v) in sorted(a["turns"].items())
            ),
            cost=a["cost"] if a["known"] else None,
            cost_unknown=a["unknown"],
            items=a["items"],
            items_fooled=a["items_fooled"],
            items_validated=a["items_validated"],
        )
    return stats
