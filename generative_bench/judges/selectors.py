"""Reads of judges: the settled human verdict on an output, a judge's agreement with it, whether a judge
is trusted, and the failure rates a judge measures (docs/benchmarking.md, "Judges").

The items a judge is compared with people on are the outputs both judged:

* a **human-judged conversation** of the task (``metadata["mode"] == "conversation"``, written here,
  with a model verdict, not retracted) that validators **settled**: people say the target's answer
  failed when the quorum confirmed its author's "failed" or overturned its author's "good"
  (``human_failed``);
* a **replayed answer** (``ReplayAnswer``) whose rating example people settled: with no author's claim
  (``model_wrong`` None), settled ``validated_incorrect`` means people judged that it failed.

Unreadable and failed verdicts are left out of the agreement and counted (``JudgeAgreement.left_out``).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import BooleanField, Case, Count, Q, Value, When
from django.db.models.functions import Coalesce

from annotation.models import Example
from core.agreement import Agreement, agreement
from core.clustered import ClusteredRate, clustered_rates
from core.intervals import wilson_interval
from core.rogan_gladen import CorrectedRate, corrected_rate
from models_registry.models import RegisteredModel
from tasks.models import Round, Task
from tasks.red_team_stats import RedTeamStats, red_team_stats
from tasks.round_stats import rate as _ratio

from ..models import Judge, JudgeVerdict
from ..replay.selectors import Rate as PeopleRate
from ..replay.selectors import people_rates

#: The fewest items (outputs both the judge and people judged, readable verdicts only) a judge needs to
#: be trusted: below it, Cohen's kappa has a bootstrap interval too wide to mean anything (with 20 items
#: and kappa 0.6, the 95% interval is typically about 0.3 wide on either side).
MIN_TRUSTED_ITEMS = 20

_SETTLED = (Example.Status.VALIDATED_CORRECT, Example.Status.VALIDATED_INCORRECT)


def human_failed_of(status: str, model_wrong: bool | None) -> bool | None:
    """``human_failed`` from an example's ``status`` and ``model_wrong`` (for rows read as values)."""
    if status not in _SETTLED:
        return None
    return (status == Example.Status.VALIDATED_CORRECT) == bool(model_wrong)


def human_failed(example: Example) -> bool | None:
    """The settled human verdict on "did the output fail?" for ``example``; None while it is not settled
    (pending, or flagged).

    A settled example's status says whether validators confirmed its author's claim (``model_wrong``):
    ``validated_correct`` confirms it, ``validated_incorrect`` overturns it, so the output failed exactly
    when ``(status == validated_correct) == bool(model_wrong)``. A rating example of a replayed answer
    has no claim (``model_wrong`` None, read as "did not fail"): settled ``validated_incorrect`` means
    people judged that it failed.
    """
    return human_failed_of(example.status, example.model_wrong)


def human_failed_expression(prefix: str = "") -> Case:
    """``human_failed`` as a database expression, to annotate a queryset: ``prefix`` is the lookup to the
    example (``""`` on ``Example`` itself, ``"example__"`` or ``"replay_answer__rating_example__"`` on a
    verdict). True, False, or NULL when the example is not settled."""
    correct, incorrect = Example.Status.VALIDATED_CORRECT, Example.Status.VALIDATED_INCORRECT
    claimed = Q(**{f"{prefix}model_wrong": True})
    return Case(
        When(Q(**{f"{prefix}status": correct}) & claimed, then=Value(True)),
        When(Q(**{f"{prefix}status": incorrect}) & claimed, then=Value(False)),
        When(Q(**{f"{prefix}status": correct}), then=Value(False)),
        When(Q(**{f"{prefix}status": incorrect}), then=Value(True)),
        default=Value(None),
        output_field=BooleanField(null=True),
    )


@dataclass(frozen=True)
class JudgeAgreement(Agreement):
    """``core.agreement.Agreement`` of a judge's ``failed`` with people's (``n`` readable items), and
    ``left_out``: the items people settled whose verdict is unreadable or failed, not in ``n``."""

    left_out: int = 0


@dataclass(frozen=True)
class _Pair:
    round_id: int
    status: str
    judge_failed: bool | None
    human_failed: bool | None  # None: people never settled this output
    model_id: int | None = None  # the model whose output it is (None: an example without its conversation)
    kinds: tuple[str, ...] = ()  # the author's kinds of failure of a human conversation (none for a rating)


def _pairs(judge: Judge, round_ids: Iterable[int] | None = None) -> list[_Pair]:
    """The judge's verdicts on items people settled (this module's docstring), one query."""
    return [p for p in _verdicts(judge, round_ids) if p.human_failed is not None]


def _verdicts(judge: Judge, round_ids: Iterable[int] | None = None) -> list[_Pair]:
    """Every verdict of the judge on an output not retracted, with people's settled verdict on it (None
    when they never settled it), one query."""
    verdicts = JudgeVerdict.objects.filter(judge=judge).filter(
        Q(example__isnull=True) | Q(example__is_retracted=False)
    )
    verdicts = verdicts.annotate(
        item_round=Coalesce("example__round_id", "replay_answer__replay__round_id"),
        item_model=Coalesce("example__conversation__model_id", "replay_answer__replay__model_id"),
    )
    if round_ids is not None:
        verdicts = verdicts.filter(item_round__in=list(round_ids))
    rows = verdicts.values_list(
        "item_round",
        "status",
        "failed",
        "example__status",
        "example__model_wrong",
        "replay_answer__rating_example__status",
        "replay_answer__rating_example__model_wrong",
        "item_model",
        "example__tags",
    )
    pairs = []
    for (
        round_id,
        status,
        failed,
        ex_status,
        ex_wrong,
        rating_status,
        rating_wrong,
        model_id,
        tags,
    ) in rows.iterator(chunk_size=5000):
        human = (
            human_failed_of(ex_status, ex_wrong)
            if ex_status is not None
            else human_failed_of(rating_status, rating_wrong)
        )
        kinds = tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()
        pairs.append(_Pair(round_id, status, failed, human, model_id, kinds))
    return pairs


def _agreement_of(pairs: list[_Pair], *, samples: int) -> JudgeAgreement:
    readable = [p for p in pairs if p.status == JudgeVerdict.Status.OK and p.judge_failed is not None]
    found = agreement([p.judge_failed for p in readable], [p.human_failed for p in readable], samples=samples)
    values = {f.name: getattr(found, f.name) for f in dataclasses.fields(Agreement)}
    return JudgeAgreement(**values, left_out=len(pairs) - len(readable))


def judge_agreement(judge: Judge, round_: Round | None = None, *, samples: int = 1000) -> JudgeAgreement:
    """Agreement of ``judge`` with people on "did the output fail?" over the items both judged (this
    module's docstring): in ``round_``, or pooled over the task's rounds when None.

    Returns:
        ``JudgeAgreement``: Cohen's kappa and raw agreement with their bootstrap intervals
        (``core.agreement.agreement``, ``samples`` resamples, 95%, seed 0) over ``n`` readable items,
        and ``left_out`` unreadable or failed verdicts on settled items. One query.
    """
    pairs = _pairs(judge, None if round_ is None else [round_.pk])
    return _agreement_of(pairs, samples=samples)


def judge_agreement_by_round(judge: Judge, *, samples: int = 1000) -> dict[int, JudgeAgreement]:
    """``{round id: judge_agreement(judge, round)}`` for the rounds with at least one item, in one query."""
    return _agreements_by_round(_pairs(judge), samples=samples)


def _agreements_by_round(pairs: list[_Pair], *, samples: int) -> dict[int, JudgeAgreement]:
    by_round: dict[int, list[_Pair]] = defaultdict(list)
    for pair in pairs:
        by_round[pair.round_id].append(pair)
    return {round_id: _agreement_of(items, samples=samples) for round_id, items in by_round.items()}


def is_trusted(judge: Judge, pooled: Agreement | None = None) -> bool:
    """True when the judge's pooled agreement with people (``judge_agreement(judge)``, or ``pooled`` when
    given) has a kappa at or above ``judge.agreement_floor`` over at least ``MIN_TRUSTED_ITEMS`` items;
    with fewer items it is not trusted, whatever its kappa, nor with no kappa: none with no item, and none
    when the judge and people gave every item one and the same label (kappa 0/0, ``core.agreement``: a
    judge that says "failed" to every confirmed failure agrees on each, and that tells nothing)."""
    pooled = judge_agreement(judge) if pooled is None else pooled
    return (
        pooled.kappa is not None and pooled.n >= MIN_TRUSTED_ITEMS and pooled.kappa >= judge.agreement_floor
    )


@dataclass(frozen=True)
class Rate:
    """A judge's failure rate on one set of outputs: ``failed`` of ``judged`` (readable verdicts)."""

    judged: int
    failed: int
    #: The rate with its interval across the people who wrote the conversations judged (for a replayed
    #: answer, the author of the conversation replayed; ``core.clustered``); None with nothing judged.
    clustered: ClusteredRate | None = field(default=None, compare=False)

    @property
    def rate(self) -> float | None:
        """``failed / judged`` in [0, 1]; None when nothing was judged."""
        return _ratio(self.failed, self.judged)

    # The names of ``tasks.red_team_stats.Rate``, so code that reads people's rates reads these too.
    @property
    def attempts(self) -> int:
        return self.judged

    @property
    def verified(self) -> int:
        return self.failed


@dataclass(frozen=True)
class JudgeColumn:
    """One active judge of a task on the leaderboard: ``trusted`` (``is_trusted``), its pooled
    ``agreement``, and ``rates`` keyed ``(model id, round id)``: for a round's target models, over the
    human-judged conversations held with them; for a replayed model, over its replayed answers of the
    round."""

    judge: Judge
    trusted: bool
    agreement: JudgeAgreement
    rates: dict[tuple[int, int], Rate] = field(default_factory=dict)


@dataclass(frozen=True)
class _RateRow:
    judge_id: int
    human: bool  # a human-judged conversation (else a replayed answer)
    model_id: int | None
    round_id: int
    person_id: int | None  # who wrote the conversation judged (or replayed)
    judged: int
    failed: int


def _rate_rows(judges: list[Judge]) -> list[_RateRow]:
    """Readable verdicts of ``judges`` counted per (judge, kind of item, model, round), one query. A human
    conversation's model is the target it was held with (``Conversation.model``); an example without
    a conversation row (none is written so) has no model and counts only in its round's figures."""
    rows = (
        JudgeVerdict.objects.filter(judge__in=judges, status=JudgeVerdict.Status.OK, failed__isnull=False)
        .filter(Q(example__isnull=True) | Q(example__is_retracted=False))
        .annotate(
            human=Case(
                When(example__isnull=False, then=Value(True)),
                default=Value(False),
                output_field=BooleanField(),
            ),
            item_model=Coalesce("example__conversation__model_id", "replay_answer__replay__model_id"),
            item_round=Coalesce("example__round_id", "replay_answer__replay__round_id"),
            item_person=Coalesce("example__annotator_id", "replay_answer__example__annotator_id"),
        )
        .values("judge_id", "human", "item_model", "item_round", "item_person")
        .annotate(judged=Count("id"), failed_count=Count("id", filter=Q(failed=True)))
        .order_by()
    )
    return [
        _RateRow(
            r["judge_id"],
            r["human"],
            r["item_model"],
            r["item_round"],
            r["item_person"],
            r["judged"],
            r["failed_count"],
        )
        for r in rows
    ]


def _sum_rates(rows: Iterable[_RateRow], key) -> dict:
    """``{key(row): Rate}`` summed over the rows with a key (None: left out), each with its interval
    across the people who wrote the conversations (``core.clustered``; people in the order of their ids,
    the seed 0, so the same verdicts give the same interval)."""
    sums: dict = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for row in rows:
        k = key(row)
        if k is None:
            continue
        sums[k][row.person_id][0] += row.judged
        sums[k][row.person_id][1] += row.failed
    rates = {}
    for k, people in sums.items():
        order = sorted(people, key=lambda person: (person is not None, person or 0))
        judged = [people[p][0] for p in order]
        failed = [people[p][1] for p in order]
        [clustered] = clustered_rates(failed, judged)
        rates[k] = Rate(sum(judged), sum(failed), clustered)
    return rates


def active_judges(task: Task) -> list[Judge]:
    """The task's active judges by name, their models joined."""
    return list(Judge.objects.filter(task=task, is_active=True).select_related("model").order_by("name"))


def judge_rates(task: Task) -> list[JudgeColumn]:
    """For each active judge of ``task`` (by name): whether it is trusted, its pooled agreement, and its
    failure rate per ``(model id, round id)`` (``JudgeColumn``). Readable verdicts only; retracted
    examples left out. One query for the rates, one per judge for its agreement."""
    judges = active_judges(task)
    rows = _rate_rows(judges)
    columns = []
    for judge in judges:
        pooled = judge_agreement(judge)
        mine = [r for r in rows if r.judge_id == judge.pk]
        rates = _sum_rates(mine, lambda r: None if r.model_id is None else (r.model_id, r.round_id))
        columns.append(JudgeColumn(judge, is_trusted(judge, pooled), pooled, rates))
    return columns


# --- the judges page ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundRow:
    """One round of a judge: its ``agreement`` with people there, the judge's failure rate over the
    round's human-judged conversations (``judge_rate``) and people's figures on them (``people``:
    ``attack_success_rate`` = verified failures / conversations judged, ``tasks.red_team_stats``)."""

    round: Round
    agreement: JudgeAgreement
    judge_rate: Rate
    people: RedTeamStats
    #: The judge's failure rate on the round's outputs people never judged, corrected for its errors
    #: (``core.rogan_gladen``: Rogan-Gladen, with the judge's sensitivity and specificity on the
    #: round's outputs people settled); ``refused`` says why when it cannot be.
    corrected: CorrectedRate | None = None
    #: The judge's sensitivity per kind of failure (``sensitivity_by_kind``), kinds in the task's order.
    by_kind: tuple[KindSensitivity, ...] = ()


@dataclass(frozen=True)
class KindSensitivity:
    """Of the round's human conversations people settled as failures of kind ``kind`` (the author's tag;
    a conversation of several kinds counts in each), how many the judge also judged failed (``caught``
    of ``n``), the share and its Wilson 95% interval (None with none)."""

    kind: str
    caught: int
    n: int
    sensitivity: float | None
    interval: tuple[float, float] | None

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "caught": self.caught,
            "n": self.n,
            "sensitivity": self.sensitivity,
            "interval": list(self.interval) if self.interval else None,
        }


def sensitivity_by_kind(
    verdicts: list[_Pair], round_id: int, kinds: list[str]
) -> tuple[KindSensitivity, ...]:
    """The judge's sensitivity per kind of failure in round ``round_id``: among its readable verdicts on
    human conversations people settled as failed and tagged with the kind, the share it judged failed.
    Specificity has no kind (an output that did not fail has none), so the Rogan-Gladen correction is
    per round, not per kind; this says which kinds the judge misses. ``kinds``: the task's kinds, in order."""
    out = []
    for kind in kinds:
        hits = [
            v.judge_failed
            for v in verdicts
            if v.round_id == round_id
            and v.status == JudgeVerdict.Status.OK
            and v.judge_failed is not None
            and v.human_failed is True
            and kind in v.kinds
        ]
        caught, n = sum(hits), len(hits)
        out.append(
            KindSensitivity(
                kind, caught, n, caught / n if n else None, wilson_interval(caught, n) if n else None
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class ModelRow:
    """A judge's failure rate on one model's outputs in one round (``is_target``: the round's own
    conversations with it, else its replayed answers), and people's beside it when they judged some
    (``replay.selectors.people_rates``: a replayed model's settled ratings, or the round's first
    target's attack success rate), else None."""

    model: RegisteredModel
    round: Round
    is_target: bool
    rate: Rate
    people: PeopleRate | None = None


@dataclass(frozen=True)
class JudgePanel:
    """Everything the judges page shows of one judge."""

    judge: Judge
    trusted: bool
    agreement: JudgeAgreement
    rounds: list[RoundRow]
    models: list[ModelRow]


def judge_panels(task: Task, *, samples: int = 1000) -> list[JudgePanel]:
    """The judges page's figures: for each active judge of ``task`` (by name), its pooled agreement and
    trust, a row per round of the task (``RoundRow``), and a row per model and round it judged outputs
    of (``ModelRow``, rounds in order, then models by name).

    Queries: the rounds, the red-teaming statistics (one), the rates (one), the models (one), people's
    rates (``replay.selectors.people_rates``), and one
    per judge for its agreement (pooled and per round from the same rows; the pooled interval
    resamples all the judge's items, it is not a mean of the rounds').
    """
    judges = active_judges(task)
    rounds = list(Round.objects.filter(task=task).order_by("number"))
    by_round = {r.pk: r for r in rounds}
    stats = red_team_stats(task, rounds)
    rows = _rate_rows(judges)
    models = RegisteredModel.objects.in_bulk({r.model_id for r in rows if r.model_id is not None})
    people = people_rates(task) if judges else {}
    kinds = [c["name"] for c in task.cfg.failure_categories]
    panels = []
    for judge in judges:
        verdicts = _verdicts(judge)
        pairs = [p for p in verdicts if p.human_failed is not None]
        pooled = _agreement_of(pairs, samples=samples)
        agreements = _agreements_by_round(pairs, samples=samples)
        mine = [r for r in rows if r.judge_id == judge.pk]
        human_rates = _sum_rates([r for r in mine if r.human], lambda r: r.round_id)
        round_rows = [
            RoundRow(
                round=round_,
                agreement=agreements.get(round_.pk) or _empty_agreement(),
                judge_rate=human_rates.get(round_.pk, Rate(0, 0)),
                people=stats[round_.pk],
                corrected=_corrected(verdicts, round_.pk),
                by_kind=sensitivity_by_kind(verdicts, round_.pk, kinds),
            )
            for round_ in rounds
        ]
        per_model = _sum_rates(
            mine, lambda r: None if r.model_id is None else (r.round_id, r.model_id, r.human)
        )
        model_rows = sorted(
            (
                ModelRow(models[model_id], by_round[round_id], human, rate, people.get((model_id, round_id)))
                for (round_id, model_id, human), rate in per_model.items()
                if round_id in by_round and model_id in models
            ),
            key=lambda m: (m.round.number, not m.is_target, m.model.name.casefold(), m.model.pk),
        )
        panels.append(JudgePanel(judge, is_trusted(judge, pooled), pooled, round_rows, model_rows))
    return panels


def _corrected(verdicts: list[_Pair], round_id: int, model_id: int | None = None) -> CorrectedRate:
    """The Rogan-Gladen rate of the judge's readable verdicts in ``round_id`` (``core.rogan_gladen``):
    Se and Sp on the round's outputs people settled (whatever their model), corrected on those they
    never did (of ``model_id`` only, when given). Seeded by the round."""
    readable = [
        v
        for v in verdicts
        if v.round_id == round_id and v.status == JudgeVerdict.Status.OK and v.judge_failed is not None
    ]
    settled = [v for v in readable if v.human_failed is not None]
    unjudged = [
        v for v in readable if v.human_failed is None and (model_id is None or v.model_id == model_id)
    ]
    return corrected_rate(
        [v.judge_failed for v in settled],
        [v.human_failed for v in settled],
        [v.judge_failed for v in unjudged],
        seed=round_id,
    )


def corrected_by_model(judge: Judge, round_ids: Iterable[int]) -> dict[tuple[int, int], CorrectedRate]:
    """``{(model id, round id): CorrectedRate}``: the judge's failure rate on each model's outputs in each
    round that people never judged, corrected for the judge's errors in that round (``_corrected``); a
    pair is present when the judge judged some output of that model in that round. One query."""
    verdicts = _verdicts(judge, round_ids)
    keys = {(v.model_id, v.round_id) for v in verdicts if v.model_id is not None}
    return {(model_id, round_id): _corrected(verdicts, round_id, model_id) for model_id, round_id in keys}


def _empty_agreement() -> JudgeAgreement:
    return _agreement_of([], samples=1)
