"""Reads of replays (docs/benchmarking.md, "Replay" and "Rating replayed answers"): what a replay sends,
who may see a replay, how stale a running one is, and the figures the generative leaderboard shows per
model (``replay_figures``, ``people_rates``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from annotation.models import Example
from core.clustered import ClusteredRate, clustered_rates
from core.job_queue import worker_timeout_seconds
from generative_bench.kinds import benchmarked
from models_registry.models import RoundTarget
from tasks.models import Round, Task
from tasks.red_team_stats import red_team_stats
from tasks.round_stats import median

from ..models import Replay, ReplayAnswer

#: What a killed worker leaves: a replay ``running`` whose last sign of life (its run's start, or its
#: last stored answer) is older than this is taken as cut off, and may be requested again. The job
#: cluster kills a job after ``Q_CLUSTER["timeout"]`` (``core.job_queue.worker_timeout_seconds``), and
#: the job hands over to a new run well before (``jobs.run_seconds``); this bound is used without one.
STALE_SECONDS = 3600

SETTLED = (Example.Status.VALIDATED_CORRECT, Example.Status.VALIDATED_INCORRECT)


def replayed_conversations(round_: Round) -> QuerySet[Example]:
    """The conversations a replay of ``round_`` sends: written on the platform in a red-teaming
    conversation (``metadata["mode"] == "conversation"``, source ``created``), settled by validation
    (``validated_correct`` or ``validated_incorrect``: a flagged one broke the task's rules), not
    retracted. With their contexts, by id."""
    return (
        Example.objects.filter(
            round=round_,
            source=Example.Source.CREATED,
            metadata__mode="conversation",
            status__in=SETTLED,
            is_retracted=False,
        )
        .select_related("context")
        .order_by("pk")
    )


def replayed_choice_items(round_: Round) -> QuerySet[Example]:
    """The multiple-choice items a replay of ``round_`` scores: those its scoring dataset holds
    (``leaderboards.services.build_round_datasets``: ``metadata["mode"] == "multiple_choice"``,
    ``validated_correct``, not retracted). With their contexts, by id."""
    return (
        Example.objects.filter(
            round=round_,
            metadata__mode="multiple_choice",
            status=Example.Status.VALIDATED_CORRECT,
            is_retracted=False,
        )
        .exclude(source=Example.Source.RATING)
        .select_related("context")
        .order_by("pk")
    )


def replays_visible_to(user) -> QuerySet[Replay]:
    """The replays ``user`` may see: those of the tasks they own (every replay for a superuser); none for
    anonymous users. Anything else answers 404."""
    qs = Replay.objects.select_related("round__task", "model")
    if not user.is_authenticated:
        return qs.none()
    if user.is_superuser:
        return qs
    return qs.filter(round__task__in=Task.objects.filter(owners=user).values("pk"))


def answers_of(replay: Replay) -> QuerySet[ReplayAnswer]:
    """``replay``'s stored answers, by example id."""
    return ReplayAnswer.objects.filter(replay=replay).order_by("example_id", "pk")


def last_sign_of_life(replay: Replay):
    """When ``replay``'s job last did something: the latest of its run's start and its answers' last
    writes (an aware datetime), or None when it never ran."""
    latest = ReplayAnswer.objects.filter(replay=replay).aggregate(at=Max("updated_at"))["at"]
    times = [t for t in (replay.started_at, latest) if t is not None]
    return max(times) if times else None


def is_stale(replay: Replay, *, now=None) -> bool:
    """Whether a ``running`` replay was cut off (its worker killed or its machine stopped): nothing
    happened for longer than the job cluster lets a job run (``worker_timeout_seconds()``, else
    ``STALE_SECONDS``). A queued replay is never stale: its job is still to come."""
    if replay.status != Replay.Status.RUNNING:
        return False
    now = now or timezone.now()
    last = last_sign_of_life(replay)
    limit = worker_timeout_seconds() or STALE_SECONDS
    return last is None or now - last > timedelta(seconds=limit)


@dataclass(frozen=True)
class Rate:
    """People's verdicts on one model's answers in one round: ``failed`` of ``judged``.

    ``source``: ``rating`` (settled rating examples of the model's replayed answers: ``judged`` the
    settled ones, ``failed`` those settled ``validated_incorrect``, i.e. people said the answer failed)
    or ``red_team`` (the round's own target: ``failed`` its verified failures and ``judged`` the
    round's attempts, as ``tasks.red_team_stats`` counts them for the attack success rate).
    """

    failed: int
    judged: int
    source: str = "rating"
    #: The rate with its interval across the people who wrote the conversations (for a replayed
    #: answer, the author of the conversation replayed; ``core.clustered``).
    clustered: ClusteredRate | None = field(default=None, compare=False)

    @property
    def rate(self) -> float | None:
        """``failed / judged`` in [0, 1] (lower is better); None when nothing was judged."""
        return self.failed / self.judged if self.judged else None


def people_rates(task: Task) -> dict[tuple[int, int], Rate]:
    """People's failure rate of each generative model of ``task`` per round, ``{(model id, round id):
    Rate}`` (docs/benchmarking.md, "Rating replayed answers").

    * A replayed model: over the rating examples of its replayed answers in the round
      (``services.open_rating``) that are settled and not retracted, failed = settled
      ``validated_incorrect`` (people judged the replayed answer failed), judged = settled
      (``validated_correct`` + ``validated_incorrect``); flagged and pending ones are in neither. Both
      replays of one round (kept and regenerated turns) count together.
    * The round's own target (its first ``RoundTarget`` by position, the model red-teamers talked to):
      the attack success rate's figures of ``tasks.red_team_stats`` (verified failures / attempts),
      which replace its rating figures in that round when the round has attempts: the red-teamers'
      conversations are its answers as people met them.

    Each rate carries its interval across the people who wrote the conversations (``Rate.clustered``:
    for a replayed answer, the author of the conversation replayed). A key is present only when
    something was judged (or attempted). Three queries plus those of
    ``red_team_stats``.
    """
    rates: dict[tuple[int, int], Rate] = {}
    rows = (
        ReplayAnswer.objects.filter(
            replay__round__task=task,
            rating_example__isnull=False,
            rating_example__is_retracted=False,
            rating_example__status__in=SETTLED,
        )
        .values_list("replay__model_id", "replay__round_id", "example__annotator_id")
        .annotate(
            judged=Count("pk"),
            failed=Count("pk", filter=Q(rating_example__status=Example.Status.VALIDATED_INCORRECT)),
        )
        .order_by()
    )
    by_person: dict[tuple[int, int], dict[int | None, tuple[int, int]]] = defaultdict(dict)
    for model_id, round_id, person, judged, failed in rows:
        by_person[(model_id, round_id)][person] = (failed, judged)
    for key, people in by_person.items():
        order = sorted(people, key=lambda person: (person is not None, person or 0))
        failed = [people[p][0] for p in order]
        judged = [people[p][1] for p in order]
        [clustered] = clustered_rates(failed, judged)
        rates[key] = Rate(failed=sum(failed), judged=sum(judged), source="rating", clustered=clustered)
    if not benchmarked(task.cfg):
        return rates
    targets: dict[int, int] = {}
    for round_id, model_id in (
        RoundTarget.objects.filter(round__task=task).order_by("round_id", "position", "pk")
    ).values_list("round_id", "model_id"):
        targets.setdefault(round_id, model_id)
    for round_id, stats in red_team_stats(task).items():
        if round_id in targets and stats.attempts:
            rates[(targets[round_id], round_id)] = Rate(
                failed=stats.verified, judged=stats.attempts, source="red_team", clustered=stats.asr
            )
    return rates


@dataclass(frozen=True)
class ReplayFigures:
    """One model's figures over its replays of a task's rounds (``replay_figures``).

    ``answers``: its stored answers with status ``ok`` (conversations and multiple-choice items);
    ``failed``: its answers left ``failed``; ``tokens_per_second``, ``first_token_seconds`` and
    ``cost_per_thousand`` over its answered conversations; ``mc_accuracy_by_round`` and
    ``mc_items_by_round`` keyed by round number.
    """

    model_id: int
    answers: int = 0
    failed: int = 0
    tokens_per_second: float | None = None
    first_token_seconds: float | None = None
    cost_per_thousand: Decimal | None = None
    mc_accuracy_by_round: dict[int, float | None] = field(default_factory=dict)
    mc_items_by_round: dict[int, int] = field(default_factory=dict)


def replay_figures(task: Task) -> dict[int, ReplayFigures]:
    """Per generative model of ``task`` with at least one replay answer, ``{model id: ReplayFigures}``,
    from its replays' stored answers (one query; docs/benchmarking.md, "Replay"):

    * **tokens_per_second** = sum of output tokens / sum of generation seconds, over its answered
      conversations whose both figures are known (an answer's seconds are the sum of its answers'
      ``latency_ms``: in a local model's batch, each answer's own time from its batch's start to its
      last token, so the figure is the rate one caller of a batch saw; a remote answer's, its request's
      whole time); None when none is known;
    * **first_token_seconds** = the median of its answered conversations' time to the first token of
      their last answer (``tasks.round_stats.median``); None when none is known;
    * **cost_per_thousand** = the mean cost of its answered conversations whose cost is known (the sum
      of their answers' costs at the model's prices per million tokens) x 1,000: the cost of a thousand
      replayed prompts, in the currency of the prices; None when no cost is known;
    * **mc_accuracy_by_round** = items it picked right / items scored, per round number, over the
      round's multiple-choice items with a stored pick (an item scored by two replays of the round,
      kept and regenerated turns, counts once, by its latest answer); None for a round whose items all
      failed; **mc_items_by_round** the number of items scored per round.
    """
    rows = (
        ReplayAnswer.objects.filter(replay__round__task=task)
        .order_by("replay__model_id", "updated_at", "pk")
        .values_list(
            "replay__model_id",
            "replay__round__number",
            "example_id",
            "status",
            "tokens",
            "seconds",
            "first_token_seconds",
            "cost",
            "picked",
            "correct",
            "example__metadata__mode",
        )
    )
    acc: dict[int, dict] = defaultdict(
        lambda: {"ok": 0, "failed": 0, "tokens": 0, "seconds": 0.0, "timed": 0, "ttft": [], "costs": []}
    )
    picks: dict[int, dict[int, dict[int, bool | None]]] = defaultdict(lambda: defaultdict(dict))
    for model_id, number, example_id, status, tokens, seconds, ttft, cost, picked, correct, mode in rows:
        a = acc[model_id]
        if status != ReplayAnswer.Status.OK:
            a["failed"] += 1
            if mode == "multiple_choice":
                picks[model_id][number].setdefault(example_id, None)
            continue
        a["ok"] += 1
        if mode == "multiple_choice":
            # Ordered by updated_at: the latest answer of an item scored twice wins.
            picks[model_id][number][example_id] = bool(correct) if picked is not None else None
            continue
        if tokens is not None and seconds:
            a["tokens"] += tokens
            a["seconds"] += seconds
            a["timed"] += 1
        if ttft is not None:
            a["ttft"].append(ttft)
        if cost is not None:
            a["costs"].append(cost)
    figures = {}
    for model_id, a in acc.items():
        by_round = picks.get(model_id, {})
        accuracy, items = {}, {}
        for number in sorted(by_round):
            scored = [c for c in by_round[number].values() if c is not None]
            items[number] = len(scored)
            accuracy[number] = sum(scored) / len(scored) if scored else None
        costs = a["costs"]
        figures[model_id] = ReplayFigures(
            model_id=model_id,
            answers=a["ok"],
            failed=a["failed"],
            tokens_per_second=a["tokens"] / a["seconds"] if a["timed"] and a["seconds"] > 0 else None,
            first_token_seconds=median(a["ttft"]),
            cost_per_thousand=(sum(costs, Decimal(0)) / len(costs) * 1000) if costs else None,
            mc_accuracy_by_round=accuracy,
            mc_items_by_round=items,
        )
    return figures


@dataclass(frozen=True)
class Reproduction:
    """How many of a replay's answers could be compared byte for byte with the stored ones (the round's
    own target, ``keep``, greedy both times: ``jobs.reproduction``), how many were identical, and the
    examples whose answers differ (ids, ascending)."""

    compared: int
    identical: int
    differing: tuple[int, ...]

    def as_dict(self) -> dict:
        return {
            "compared": self.compared,
            "identical": self.identical,
            "differing_examples": list(self.differing),
        }


def reproduction_of(replay: Replay) -> Reproduction:
    """The ``Reproduction`` of ``replay``'s stored answers (one query)."""
    compared, identical, differing = 0, 0, []
    rows = ReplayAnswer.objects.filter(replay=replay, status=ReplayAnswer.Status.OK).values_list(
        "example_id", "generation__reproduction__identical"
    )
    for example_id, same in rows.order_by("example_id"):
        if same is None:
            continue
        compared += 1
        if same:
            identical += 1
        else:
            differing.append(example_id)
    return Reproduction(compared, identical, tuple(differing))
