"""Do validators agree on each rubric question? Krippendorff's alpha per question of a red-teaming
round, overall and per kind of failure, with its bootstrap interval over conversations
(``core.reliability``; docs/generative.md, "Agreement per rubric question").

Why here: the task page and the round API show it beside the attack success rate (``red_team_stats``),
and this app sits below annotation and validation, so it reads the validators' answers through the
examples' reverse relation (``Example.validations``), as ``round_stats`` reads verdicts for the round's
alpha.

Units and coders: a unit is a conversation the attack success rate counts (written here, not retracted,
a model verdict, ``metadata["mode"] == "conversation"``); its values for question q are the validators'
answers to q (``Validation.rubric_answers[q]``), one per validator; owner verdicts are left out (they
settle, they do not code), and so are answers the question does not offer. Per kind of failure: the
conversations tagged with it (``Example.tags``, the author's kinds).

A question's alpha is **below the floor** when its interval's lower end is under the task's
``red_team.agreement_floor`` (default 0.667, Krippendorff's lowest for tentative conclusions). Then the
rates it bears on are greyed with the reason: every rate of the round when it is the round's alpha (the
attack success rate counts a failure when any question fails), a kind of failure's rate when it is that
kind's alpha. An alpha that cannot be measured (fewer than two validators' answers on every
conversation, or no variation) greys nothing and says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from core.reliability import Reliability, reliability

from .kinds import conversational
from .models import Round, Task
from .round_stats import examples_model, not_collected_sources


@dataclass(frozen=True)
class QuestionAgreement:
    """One rubric question in one round: its ``overall`` alpha and ``by_category`` (kind name ->
    alpha over the conversations tagged with it)."""

    name: str
    question: str
    level: str
    overall: Reliability
    by_category: dict[str, Reliability] = field(default_factory=dict)


@dataclass(frozen=True)
class RubricAgreement:
    """A round's agreement per rubric question, the ``floor``, and what falls below it:
    ``unreliable`` (a reason when some question's round alpha is below the floor: every rate of the
    round is greyed) and ``unreliable_categories`` (kind name -> reason)."""

    floor: float
    questions: tuple[QuestionAgreement, ...]
    unreliable: str = ""
    unreliable_categories: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The JSON form of the API, exports and release cards."""
        return {
            "floor": self.floor,
            "questions": [
                {
                    "name": q.name,
                    "level": q.level,
                    "overall": q.overall.as_dict(),
                    "by_category": {name: r.as_dict() for name, r in q.by_category.items()},
                }
                for q in self.questions
            ],
            "unreliable": self.unreliable or None,
            "unreliable_categories": self.unreliable_categories,
        }


def below(figure: Reliability, floor: float) -> bool:
    """True when ``figure``'s interval is measured and its lower end is under ``floor``."""
    return figure.interval is not None and figure.interval[0] < floor


def _reason(question: str, figure: Reliability, floor: float, where: str) -> str:
    low, high = figure.interval
    return (
        f"validators do not agree enough on {question!r}{where}: alpha {figure.alpha:.2f} "
        f"(95% interval {low:.2f} to {high:.2f}, {figure.items} conversation{'' if figure.items == 1 else 's'}) "
        "has its lower end under "
        f"the floor {floor:.3f}"
    )


def rubric_agreement(task: Task, rounds: Iterable[Round]) -> dict[int, RubricAgreement]:
    """``{round id: RubricAgreement}`` for the red-teaming ``task``'s ``rounds``; ``{}`` for another task.

    One query over the validators' answers of all the rounds; the alphas are computed in Python
    (``core.reliability``, 1,000 resamples each, seeded by the round's id).
    """
    if not conversational(task.cfg):
        return {}
    rounds = list(rounds)
    cfg = task.cfg
    rubric, floor = cfg.rubric, cfg.agreement_floor
    names = [c["name"] for c in cfg.failure_categories]
    Example = examples_model()
    rows = (
        Example.objects.filter(
            round_id__in=[r.pk for r in rounds],
            is_retracted=False,
            model_wrong__isnull=False,
            metadata__mode="conversation",
            validations__is_owner_verdict=False,
        )
        .exclude(source__in=not_collected_sources())
        .values_list("round_id", "pk", "tags", "validations__rubric_answers")
    )
    # round -> question -> example -> answers; and each example's kinds.
    answers: dict[int, dict[str, dict[int, list[str]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    kinds: dict[int, set[str]] = {}
    for round_id, example_id, tags, given in rows.iterator(chunk_size=5000):
        kinds[example_id] = set(tags or [])
        given = given if isinstance(given, dict) else {}
        for question in rubric.questions:
            value = given.get(question.name)
            if value in question.answers:
                answers[round_id][question.name][example_id].append(value)
    out = {}
    for round_ in rounds:
        questions = []
        unreliable, unreliable_categories = "", {}
        for question in rubric.questions:
            units = answers[round_.pk][question.name]
            level, order = question.measurement, list(question.answers)
            overall = reliability(list(units.values()), level, order, seed=round_.pk)
            by_category = {
                name: reliability(
                    [values for example_id, values in units.items() if name in kinds.get(example_id, ())],
                    level,
                    order,
                    seed=round_.pk,
                )
                for name in names
            }
            questions.append(QuestionAgreement(question.name, question.question, level, overall, by_category))
            if not unreliable and below(overall, floor):
                unreliable = _reason(question.name, overall, floor, "")
            for name, figure in by_category.items():
                if name not in unreliable_categories and below(figure, floor):
                    unreliable_categories[name] = _reason(question.name, figure, floor, f" in {name!r}")
        out[round_.pk] = RubricAgreement(floor, tuple(questions), unreliable, unreliable_categories)
    return out
