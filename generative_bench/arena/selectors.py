"""Reads of the arena (docs/benchmarking.md, "Arena"): the models that take part, the votes that count
and the Bradley-Terry ranking fitted on them, the prompts a round offers, and the names a person is
shown.

Which votes count. A vote counts unless its voter is, now, held for review on the task
(``TaskWorker.held_at``) or blocked (``User.is_blocked``, or on the task's block list): the rule is read
when the ranking is computed, so a hold placed after someone voted takes their votes out, and a hold
released puts them back. ``votes_of`` gives the counted votes and how many were left out for each
reason (counts only).

The fit (``core.pairwise.rank``: maximum likelihood and 200 bootstrap samples) takes seconds for large
arenas, so it is cached (Django's cache) under a key made of the task, the number of votes, the latest
vote (id and time), the voters left out and the models: any new vote, hold, block or model changes the
key, and nothing else refits.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet

from annotation.chat_format import context_message
from annotation.models import CandidateRating, Example
from annotation.red_team.ratings import outcome as rated_outcome
from annotation.red_team.ratings import rated_pairs
from core.api.lookups import MAX_ID
from core.fragility import Fragility, rank_fragility
from core.pairwise import Ranking, Vote, pair_probabilities, rank
from core.self_identification import identity_terms as core_identity_terms
from core.self_identification import named_terms
from core.style_control import StyledVote, StyleRanking, style_controlled, style_counts
from core.voter_integrity import GroupTest, VoterTest, group_tests, voter_tests
from generative_bench.kinds import benchmarked
from models_registry.models import RegisteredModel
from models_registry.selectors import anonymous_numbers, models_visible_to, sees_real_identity
from tasks.models import Round, Task, TaskWorker

from ..models import Battle, LeakMeasurement

#: Registry sources of a generative model: a chat model on this server, or on an OpenAI-compatible one.
GENERATIVE_SOURCES = (RegisteredModel.Source.LOCAL_DIR, RegisteredModel.Source.CHAT_ENDPOINT)
#: Why a vote is left out of the ranking (``ArenaVotes.left_out``'s keys, in the order they are tried).
LEFT_OUT_REASONS = ("blocked", "held")
#: Why else a vote is left out: its battle was not anonymous (an answer named a model; ``Battle.anonymous``).
NOT_ANONYMOUS = "not_anonymous"
#: How long a fitted ranking stays cached, in seconds; the key changes with every vote anyway.
CACHE_SECONDS = 24 * 3600
#: Bootstrap samples of the ranking (``core.pairwise.rank``'s default, the pages' and the API's).
SAMPLES = 200
#: Fragility (``core.fragility``): removals tried against each rival, and the most votes it is searched
#: on (each removal refits the ranking: above this many votes the page would wait too long; it says so).
FRAGILITY_MAX_REMOVALS = 20
FRAGILITY_MAX_VOTES = 20_000
#: Bootstrap samples of the style-controlled fit (each a logistic regression built in Python: fewer than
#: the plain ranking's).
STYLE_SAMPLES = 100


def arena_models(task: Task) -> QuerySet[RegisteredModel]:
    """The models the arena pairs: ``task``'s ready generative models (local chat models and remote chat
    endpoints), by id; none for a task that is not a red-teaming task."""
    if not benchmarked(task.cfg):
        return RegisteredModel.objects.none()
    return RegisteredModel.objects.filter(
        task=task, status=RegisteredModel.Status.READY, source__in=GENERATIVE_SOURCES
    ).order_by("pk")


def identity_terms(task: Task) -> list[str]:
    """The terms of the arena's anonymity check (``core.self_identification.identity_terms``): the
    maintained list, the names of every registered generative model (of any task: a model may name
    another's family) and the task's own ``red_team.arena_identity_terms``."""
    names = RegisteredModel.objects.filter(source__in=GENERATIVE_SOURCES).values_list("name", flat=True)
    return core_identity_terms(names, task.cfg.arena_identity_terms)


def own_battle(user, pk: int | None) -> Battle | None:
    """The battle ``pk`` if ``user`` is its voter, with its task and models; None otherwise (another
    user's battle is answered as a missing one)."""
    if pk is None or user is None or not user.is_authenticated or not 1 <= pk <= MAX_ID:
        return None
    return Battle.objects.filter(pk=pk, voter=user).select_related("task", "model_a", "model_b").first()


# --- prompts from a round -------------------------------------------------------------------------------


def settled_conversations(task: Task) -> QuerySet[Example]:
    """``task``'s conversations that validation settled (validated correct or incorrect), written on the
    platform and not retracted: the examples whose first message the arena may use as a prompt."""
    return Example.objects.filter(
        round__task=task,
        metadata__mode="conversation",
        source=Example.Source.CREATED,
        status__in=[Example.Status.VALIDATED_CORRECT, Example.Status.VALIDATED_INCORRECT],
        is_retracted=False,
    )


def rounds_with_prompts(task: Task) -> list[tuple[int, int]]:
    """``[(round number, settled conversations)]`` of ``task``'s rounds that have at least one, by number."""
    rows = (
        settled_conversations(task).values("round__number").annotate(n=Count("pk")).order_by("round__number")
    )
    return [(row["round__number"], row["n"]) for row in rows]


def prompt_example(task: Task, pk) -> Example | None:
    """The settled conversation ``pk`` of ``task`` (``settled_conversations``), or None."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        return None
    return settled_conversations(task).select_related("context", "round").filter(pk=pk).first()


def pick_round_prompt(task: Task, number: int, voter, *, rng: random.Random | None = None) -> Example | None:
    """A settled conversation of round ``number`` of ``task`` to take a prompt from, at random among those
    ``voter`` has not yet had in a battle (among all, once they had every one); None when the round has
    none."""
    round_ = Round.objects.filter(task=task, number=number).first()
    if round_ is None:
        return None
    pool = settled_conversations(task).filter(round=round_)
    used = Battle.objects.filter(voter=voter, source_example__isnull=False).values("source_example_id")
    ids = list(pool.exclude(pk__in=used).values_list("pk", flat=True)) or list(
        pool.values_list("pk", flat=True)
    )
    if not ids:
        return None
    return pool.select_related("context", "round").get(pk=(rng or random).choice(sorted(ids)))


def prompt_messages(example: Example) -> list[dict]:
    """The messages a battle on ``example`` sends both models: its passage as the system message
    (``annotation.chat_format.context_message``, as the round's target read it), then the conversation's
    first user message. Raises ``ValueError`` for an example without a user message."""
    first = next(
        (
            m
            for m in (example.inputs or {}).get("messages", [])
            if m.get("role") == "user" and m.get("content")
        ),
        None,
    )
    if first is None:
        raise ValueError(f"example {example.pk} has no user message")
    system = context_message(example.round.task.cfg, example.context)
    return [*([system] if system else []), {"role": "user", "content": first["content"]}]


# --- votes and the ranking ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArenaVotes:
    """The votes of a task's arena: ``votes`` (``core.pairwise.Vote`` of model ids, ``a`` the model shown
    as A, in the order they were cast) that count, and ``left_out`` ({reason: number of votes}, every
    reason of ``LEFT_OUT_REASONS`` and ``NOT_ANONYMOUS``, 0 when none) that do not."""

    votes: list[Vote]
    left_out: dict[str, int] = field(default_factory=dict)
    #: Each counted vote's two answers' style counts (``core.style_control.style_counts``), in order.
    styles: list[tuple[dict, dict]] = field(default_factory=list)
    #: How many of ``votes`` are rated pairs of side-by-side answers (``rated_pair_votes``), the last ones.
    rated_pairs: int = 0

    @property
    def n_left_out(self) -> int:
        return sum(self.left_out.values())


def _voted(task: Task) -> QuerySet[Battle]:
    return Battle.objects.filter(task=task, status=Battle.Status.VOTED)


def left_out_voters(task: Task) -> dict[str, set[int]]:
    """``{"blocked": user ids, "held": user ids}`` of the people whose arena votes on ``task`` do not
    count now, their battles' votes and their rated side-by-side pairs alike: blocked (the account, or on
    the task's block list) and held for review on the task. A person both blocked and held is under
    ``blocked`` only."""
    workers = TaskWorker.objects.filter(task=task).filter(
        Q(held_at__isnull=False) | Q(listing=TaskWorker.Listing.BLOCKED)
    )
    listed = {uid for uid, listing in workers.values_list("user_id", "listing") if listing == "blocked"}
    held = set(workers.filter(held_at__isnull=False).values_list("user_id", flat=True))
    # Blocked accounts are few; only those who voted here (in a battle, or by rating side by side) are read.
    voted_here = _voted(task).filter(voter=OuterRef("pk"))
    rated_here = CandidateRating.objects.filter(
        turn__conversation__round__task=task, turn__conversation__annotator=OuterRef("pk")
    )
    accounts = set(
        get_user_model()
        .objects.filter(is_blocked=True)
        .filter(Exists(voted_here) | Exists(rated_here))
        .values_list("pk", flat=True)
    )
    blocked = listed | accounts
    return {"blocked": blocked, "held": held - blocked}


def votes_of(task: Task) -> ArenaVotes:
    """The votes cast in ``task``'s arena, those of people held for review or blocked, and those of
    battles that were not anonymous (``NOT_ANONYMOUS``), left out and counted (module docstring)."""
    excluded = left_out_voters(task)
    votes: list[Vote] = []
    styles: list[tuple[dict, dict]] = []
    left_out = dict.fromkeys((*LEFT_OUT_REASONS, NOT_ANONYMOUS), 0)
    rows = (
        _voted(task)
        .order_by("voted_at", "pk")
        .values_list("model_a_id", "model_b_id", "vote", "voter_id", "answer_a", "answer_b", "anonymous")
    )
    for a, b, outcome, voter, answer_a, answer_b, anonymous in rows.iterator(chunk_size=2000):
        reason = next((r for r in LEFT_OUT_REASONS if voter in excluded[r]), None)
        if reason is None and not anonymous:
            reason = NOT_ANONYMOUS
        if reason is None:
            votes.append(Vote(a, b, outcome))
            styles.append((style_counts(answer_a), style_counts(answer_b)))
        else:
            left_out[reason] += 1
    battles = len(votes)
    rated_pair_votes(task, excluded, votes, styles, left_out)
    return ArenaVotes(votes, left_out, styles, rated_pairs=len(votes) - battles)


def rated_pair_votes(
    task: Task,
    excluded: dict[str, set[int]],
    votes: list[Vote],
    styles: list[tuple[dict, dict]],
    left_out: dict,
) -> None:
    """Add to ``votes`` (and ``styles``) the rated pairs of ``task``'s side-by-side conversations
    (``annotation.red_team.ratings.rated_pairs``: each pair of answers to one first message a vote, the
    higher rating winning, equal ratings a tie), under the battles' rules: a writer held for review or
    blocked (``excluded``: ``left_out_voters``) and a pair where an answer names a model
    (``identity_terms``: the writer may have known whom they rated) are left out, counted in
    ``left_out``."""
    pairs = rated_pairs(task)
    if not pairs:
        return
    terms = identity_terms(task)
    for a, b, score_a, score_b, writer, answer_a, answer_b in pairs:
        reason = next((r for r in LEFT_OUT_REASONS if writer in excluded[r]), None)
        if reason is None and (named_terms(answer_a, terms) or named_terms(answer_b, terms)):
            reason = NOT_ANONYMOUS
        if reason is None:
            votes.append(Vote(a, b, rated_outcome(score_a, score_b)))
            styles.append((style_counts(answer_a), style_counts(answer_b)))
        else:
            left_out[reason] += 1


@dataclass(frozen=True)
class ArenaSummary:
    """The fitted ranking of a task's arena (``core.pairwise.Ranking``, keys model ids) and the votes left
    out of it by reason (``ArenaVotes.left_out``)."""

    ranking: Ranking
    left_out: dict[str, int]
    #: Model id -> its rank's fragility (``core.fragility.rank_fragility``), for the models with votes;
    #: empty when the arena has more than ``FRAGILITY_MAX_VOTES`` votes (``fragility_searched`` False).
    fragility: dict[int, Fragility] = field(default_factory=dict)
    fragility_searched: bool = True
    #: The ranking controlled for answer length and markdown (``core.style_control``); None with no vote.
    style: StyleRanking | None = None
    #: How many counted votes are rated pairs of side-by-side answers (``ArenaVotes.rated_pairs``).
    rated_pairs: int = 0

    @property
    def n_left_out(self) -> int:
        return sum(self.left_out.values())


def _counted(task: Task) -> QuerySet[Battle]:
    """The voted battles of ``task`` whose votes count now: anonymous, and not of a voter held for review
    or blocked (``votes_of``'s rule, as one query)."""
    excluded = set().union(*left_out_voters(task).values())
    return _voted(task).filter(anonymous=True).exclude(voter_id__in=excluded)


def _cache_key(task: Task, model_ids: list[int], samples: int, *, kind: str = "arena-ranking") -> str:
    """The key of ``task``'s fit (``kind`` names what is cached: the ranking, or the voter checks): it
    changes with any vote cast, any voter left out or let back in, and the set of models (module
    docstring)."""
    latest = _voted(task).aggregate(n=Count("pk"), last=Max("pk"), at=Max("voted_at"))
    excluded = {reason: sorted(ids) for reason, ids in left_out_voters(task).items()}
    rated = CandidateRating.objects.filter(turn__conversation__round__task=task).aggregate(
        n=Count("pk"), last=Max("pk")
    )
    state = [
        latest["n"],
        latest["last"],
        latest["at"].isoformat() if latest["at"] else None,
        rated["n"],
        rated["last"],
    ]
    raw = json.dumps([state, excluded, model_ids, samples], sort_keys=True)
    return f"{kind}:{task.pk}:{hashlib.sha256(raw.encode()).hexdigest()[:32]}"


def _voted_model_ids(task: Task) -> list[int]:
    """The ids of the models in any voted battle of ``task``, sorted."""
    pairs = _voted(task).values_list("model_a_id", "model_b_id").distinct()
    rated = CandidateRating.objects.filter(turn__conversation__round__task=task).values_list(
        "turn__model_id", flat=True
    )
    return sorted(set().union(*(set(pair) for pair in pairs), set(rated)))


def arena_summary(task: Task, *, samples: int = SAMPLES) -> ArenaSummary:
    """``task``'s arena ranking: Bradley-Terry over the votes that count (``votes_of``), by
    ``core.pairwise.rank`` (``samples`` bootstrap samples, seed 0, 95% intervals), over the arena's
    models (``arena_models``) and any model that has votes, so a model without votes is listed too; and
    each voted model's rank fragility (``core.fragility``, up to ``FRAGILITY_MAX_REMOVALS`` removals per
    rival, when there are at most ``FRAGILITY_MAX_VOTES`` votes). Cached (module docstring)."""
    model_ids = sorted(set(arena_models(task).values_list("pk", flat=True)).union(_voted_model_ids(task)))
    key = _cache_key(task, model_ids, samples)
    summary = cache.get(key)
    if summary is None:
        counted = votes_of(task)
        ranking = rank(counted.votes, models=model_ids, samples=samples)
        searched = len(counted.votes) <= FRAGILITY_MAX_VOTES
        fragility = {}
        if searched:
            # Over the models with votes only, as the table's ranks are.
            for pk in {k for v in counted.votes for k in (v.a, v.b)}:
                fragility[pk] = rank_fragility(counted.votes, pk, max_removals=FRAGILITY_MAX_REMOVALS)
        style = None
        if counted.votes:
            style = style_controlled(
                [
                    StyledVote(v.a, v.b, v.outcome, sa, sb)
                    for v, (sa, sb) in zip(counted.votes, counted.styles, strict=True)
                ],
                samples=min(samples, STYLE_SAMPLES),
            )
        summary = ArenaSummary(ranking, counted.left_out, fragility, searched, style, counted.rated_pairs)
        cache.set(key, summary, CACHE_SECONDS)
    return summary


def arena_ranking(task: Task, *, samples: int = SAMPLES) -> Ranking:
    """``task``'s Bradley-Terry ranking of its arena (``arena_summary``): ``core.pairwise.Ranking`` whose
    keys are model ids."""
    return arena_summary(task, samples=samples).ranking


# --- names -----------------------------------------------------------------------------------------------


def shown_names(user, task: Task, models) -> dict[int, str]:
    """``{model id: the name user is shown}`` for ``models`` of ``task``, by the leaderboard's rule
    (docs/domain.md, "Visibility"): the model's name; "Anonymous model N" for an anonymous model whose
    identity ``user`` may not see; "Unpublished model N" for an unpublished model ``user`` may not see
    (N by id among the task's unpublished models), so a vote reveals no hidden name."""
    models = list(models)
    visible = set(
        models_visible_to(user, task).filter(pk__in=[m.pk for m in models]).values_list("pk", flat=True)
    )
    owns = task.is_owner(user) if user is not None else False
    numbers = anonymous_numbers(task)
    hidden = {
        pk: n
        for n, pk in enumerate(
            RegisteredModel.objects.filter(task=task, is_published=False)
            .order_by("pk")
            .values_list("pk", flat=True),
            start=1,
        )
    }
    names = {}
    for m in models:
        if m.is_anonymous and not (
            m.pk in visible and user is not None and sees_real_identity(user, m, owns)
        ):
            names[m.pk] = f"Anonymous model {numbers.get(m.pk, '?')}"
        elif m.pk in visible:
            names[m.pk] = m.name
        else:
            names[m.pk] = f"Unpublished model {hidden.get(m.pk, '?')}"
    return names


def _finite(interval) -> tuple[float, float] | None:
    if interval is None:
        return None
    low, high = interval
    if low is None or high is None or not all(abs(float(x)) < float("inf") for x in (low, high)):
        return None
    return float(low), float(high)


def ranking_table(task: Task, user, summary: ArenaSummary) -> dict:
    """The ranking as ``user`` sees it (public, as the leaderboard: models ``user`` may not see are not
    listed, only counted in ``unlisted``). JSON-ready:

    ``rows``: best first (``Ranking.order``), each ``model_id``, ``name`` (``shown_names``), ``rank`` (1 +
    the number of models with votes whose score is higher, so equal scores share a rank and a model
    without votes, placed at 1000 by the fit, pushes nobody down; None without votes), ``score`` (Elo-like, mean 1000), ``low``/``high`` (the 95%
    bootstrap interval; None without votes) and ``votes`` (votes counted with the model in them);
    ``pairs``: the matrix of votes per pair over the rows, ``{"model_id", "name", "votes": [count per
    row, None on the diagonal]}``; ``n_votes`` (battles' votes and rated pairs), ``rated_pairs`` (of
    them, the rated pairs of side-by-side conversations), ``samples``, ``left_out`` ({reason: votes}),
    ``n_left_out``, ``unlisted`` (models not shown); each row's ``fragility`` (``_fragility``), with
    ``fragility_searched`` and ``fragility_max_removals``. The fragility's rival is not named: it may be
    a model ``user`` may not see. Each row's ``share`` (the share of counted votes with the model in
    them; None without votes), ``target_share`` (``_target_shares``: the share the pair rule now aims
    at; None for a model no longer served) and ``withdrawn`` (True for a model that was in battles but is
    no longer served: not ready, or no longer generative; it stays listed, never hidden),
    ``votes_since_change`` (``_votes_since_change``) and ``provisional`` (fewer of those than the task's
    ``arena_min_votes``, given as ``min_votes``). Each row's ``style_controlled`` (``_style_row``) and
    ``style_coefficients``: ``[{"feature", "coefficient", "interval"}]`` of the style-controlled fit
    (``core.style_control``; empty without votes).
    """
    ranking = summary.ranking
    order = ranking.order()
    models = {m.pk: m for m in RegisteredModel.objects.filter(pk__in=order)}
    visible = set(models_visible_to(user, task).filter(pk__in=order).values_list("pk", flat=True))
    listed = [pk for pk in order if pk in visible and pk in models]
    names = shown_names(user, task, [models[pk] for pk in listed])
    per_model = {pk: ranking.votes_of(pk) for pk in order}
    voted_scores = [float(ranking.scores[pk]) for pk in order if per_model[pk]]
    served = set(arena_models(task).values_list("pk", flat=True))
    target_share = _target_shares(ranking, sorted(served))
    since_change = _votes_since_change(task, [models[pk] for pk in listed])
    min_votes = task.cfg.arena_min_votes
    rows = []
    for pk in listed:
        interval = _finite(ranking.intervals.get(pk)) if per_model[pk] else None
        score = float(ranking.scores[pk])
        rows.append(
            {
                "model_id": pk,
                "name": names[pk],
                "rank": 1 + sum(s > score for s in voted_scores) if per_model[pk] else None,
                "score": score,
                "low": interval[0] if interval else None,
                "high": interval[1] if interval else None,
                "votes": per_model[pk],
                "fragility": _fragility(summary, pk),
                "style_controlled": _style_row(summary, pk),
                "share": per_model[pk] / ranking.n_votes if ranking.n_votes else None,
                "target_share": target_share.get(pk),
                "withdrawn": pk not in served,
                "votes_since_change": since_change[pk],
                "provisional": since_change[pk] < min_votes,
            }
        )
    pairs = [
        {
            "model_id": a,
            "name": names[a],
            "votes": [None if a == b else ranking.votes_per_pair.get(frozenset((a, b)), 0) for b in listed],
        }
        for a in listed
    ]
    return {
        "rows": rows,
        "pairs": pairs,
        "n_votes": ranking.n_votes,
        "rated_pairs": summary.rated_pairs,
        "battle_votes": ranking.n_votes - summary.rated_pairs,
        "samples": ranking.samples,
        "left_out": dict(summary.left_out),
        "n_left_out": summary.n_left_out,
        "unlisted": len(order) - len(listed),
        "fragility_searched": summary.fragility_searched,
        "fragility_max_removals": FRAGILITY_MAX_REMOVALS,
        "style_coefficients": summary.style.as_dict()["coefficients"] if summary.style else [],
        "min_votes": min_votes,
    }


def _votes_since_change(task: Task, models: list[RegisteredModel]) -> dict[int, int]:
    """``{model id: votes cast with it since its answers last changed}`` (``answers_changed_at``; all its
    votes when never changed), of the votes that count now (``_counted``). One query per model."""
    counted = _counted(task)
    counts = {}
    for model in models:
        votes = counted.filter(Q(model_a=model) | Q(model_b=model))
        if model.answers_changed_at is not None:
            votes = votes.filter(voted_at__gte=model.answers_changed_at)
        counts[model.pk] = votes.count()
    return counts


def _target_shares(ranking: Ranking, served: list[int]) -> dict[int, float]:
    """Each served model's target share of battles: the probability that the next battle the pair rule
    draws involves it (``core.pairwise.pair_probabilities`` summed over its pairs); {} with fewer than two
    served models. The shares sum to 2: each battle has two models."""
    if len(served) < 2:
        return {}
    shares = dict.fromkeys(served, 0.0)
    for (i, j), p in pair_probabilities(ranking, served).items():
        shares[i] += p
        shares[j] += p
    return shares


def _style_row(summary: ArenaSummary, pk: int) -> dict | None:
    """A row's ``style_controlled``: ``{"score", "low", "high"}`` of the style-controlled fit; None for a
    model without votes."""
    style = summary.style
    if style is None or pk not in style.scores:
        return None
    interval = _finite(style.intervals.get(pk))
    return {
        "score": float(style.scores[pk]),
        "low": interval[0] if interval else None,
        "high": interval[1] if interval else None,
    }


def _fragility(summary: ArenaSummary, pk: int) -> dict | None:
    """A row's ``fragility``: ``{"removals": k or None (none found within the cap), "direction": "up" or
    "down" or None}``; None for a model without votes or an arena too large to search."""
    found = summary.fragility.get(pk)
    if found is None:
        return None
    return {"removals": found.removals, "direction": found.direction}


@dataclass(frozen=True)
class VoterChecks:
    """The voter-integrity tests of a task's arena (docs/benchmarking.md, "Voter integrity"):
    ``per_voter`` ({user id: ``core.voter_integrity.VoterTest``}, ``pushed`` a model id) and ``groups``
    ({model id: ``core.voter_integrity.GroupTest``}, ``voters`` user ids)."""

    per_voter: dict[int, VoterTest]
    groups: dict[int, GroupTest]

    def reasons(self, names: dict[int, str]) -> dict[int, str]:
        """``{user id: why they are flagged}`` for every voter either test flags, the reasons of both
        joined by "; " (``names``: model id -> the name to write)."""
        out: dict[int, list[str]] = {}
        for voter, test in self.per_voter.items():
            if test.flagged:
                pushed = names.get(test.pushed, str(test.pushed))
                out.setdefault(voter, []).append(
                    f"Arena votes inconsistent with the ranking: z = {test.z:.2f} over {test.votes} decisive "
                    f"votes (flagged under -1.64), favouring {pushed} (z = {test.pushed_z:+.2f})"
                )
        for model, group in self.groups.items():
            if group.flagged:
                for voter in group.voters:
                    out.setdefault(voter, []).append(
                        f"One of {group.count} voters who chose {names.get(model, str(model))} far more often "
                        f"than the ranking predicts ({group.expected:.1f} expected by chance; group test)"
                    )
        return {voter: "; ".join(why) for voter, why in out.items()}


def voter_checks(task: Task) -> VoterChecks:
    """The per-voter test (``core.voter_integrity.voter_tests``) and the group test (``group_tests``) on
    the votes of ``task``'s arena that count now (held and blocked voters are out of the ranking
    already). One query for the votes, one ranking fit per voter (seconds on 20,000 votes), so cached
    under the ranking's key."""
    key = _cache_key(task, _voted_model_ids(task), 0, kind="arena-voters")
    found = cache.get(key)
    if found is None:
        rows = list(
            _counted(task)
            .order_by("voted_at", "pk")
            .values_list("voter_id", "model_a_id", "model_b_id", "vote")
        )
        found = VoterChecks(voter_tests(rows), group_tests(rows))
        cache.set(key, found, CACHE_SECONDS)
    return found


def voter_check_table(task: Task, user) -> dict | None:
    """The voter checks (``voter_checks``) as the task's owners see them on the ranking page and in the
    API; None for anyone else (who voted how is not public). JSON-ready: ``voters`` (voters whose votes
    count), ``tested`` (those with enough decisive votes for the per-voter test), ``flagged``: ``[{"user_id", "username", "reason"}]`` by username (``VoterChecks.reasons``),
    ``groups``: ``[{"model_id", "name", "voters", "expected", "excess", "threshold", "flagged"}]`` for
    the models with at least one favouring voter, largest excess first; ``held`` (voters held for review
    on the task now, whose votes are already out)."""
    if user is None or not task.is_owner(user):
        return None
    checks = voter_checks(task)
    models = RegisteredModel.objects.filter(task=task)
    names = shown_names(user, task, models)
    reasons = checks.reasons(names)
    usernames = dict(get_user_model().objects.filter(pk__in=list(reasons)).values_list("pk", "username"))
    return {
        "voters": len(checks.per_voter),
        "tested": sum(1 for t in checks.per_voter.values() if t.z is not None),
        "flagged": sorted(
            (
                {"user_id": voter, "username": usernames.get(voter, str(voter)), "reason": reason}
                for voter, reason in reasons.items()
            ),
            key=lambda row: row["username"],
        ),
        "groups": [
            {
                "model_id": model,
                "name": names.get(model, str(model)),
                "voters": group.count,
                "expected": group.expected,
                "excess": group.excess,
                "threshold": group.threshold,
                "flagged": group.flagged,
            }
            for model, group in sorted(checks.groups.items(), key=lambda item: -item[1].excess)
            if group.count
        ],
        "held": len(left_out_voters(task)["held"]),
    }


#: The most recent voted battles a leak-rate measurement reads (10,000 answers: under a second of logistic
#: regression on one thread).
LEAK_MAX_BATTLES = 5_000


def revealed_answers(task: Task, *, limit: int = LEAK_MAX_BATTLES) -> list[tuple[int, str, int]]:
    """``[(conversation, answer text, model id)]``, two per battle, of the ``limit`` most recent voted
    battles of ``task``'s arena: battles whose models were revealed to their voter (any voter, counted
    or not: the question is whether text tells models apart). ``conversation`` is the id of the first
    turn of the battle's conversation (a vote per turn), so that the turns of one conversation, which
    share its context, fall on one side of the leak rate's split."""
    rows = list(
        _voted(task)
        .order_by("-voted_at", "-pk")
        .values_list("pk", "answer_a", "model_a_id", "answer_b", "model_b_id")[:limit]
    )
    parent_of = dict(Battle.objects.filter(task=task, parent__isnull=False).values_list("pk", "parent_id"))

    def first_turn(pk: int) -> int:
        while pk in parent_of:
            pk = parent_of[pk]
        return pk

    return [
        item for pk, ta, ma, tb, mb in rows for item in ((first_turn(pk), ta, ma), (first_turn(pk), tb, mb))
    ]


def _readable_cue(word: str) -> str:
    """A word of the leak classifier as a person reads it: its pseudo-words (``core.leak_rate.with_cues``)
    in words ("length_4" is "4 to 7 words", "unfinished" "stops mid-sentence"); others as they are."""
    if word == "unfinished":
        return "stops mid-sentence"
    if word.startswith("length_") and word[7:].isdigit():
        n = int(word[7:])
        return f"{n} to {2 * n - 1} words" if n > 1 else "1 word"
    return word


def latest_leak(task: Task, user=None) -> dict | None:
    """The latest leak-rate measurement of ``task``'s arena as shown on the ranking page and in the API:
    ``{"accuracy", "low", "high", "chance", "tested", "models", "train_battles", "test_battles", "leaks" (the interval
    lies above chance), "reason", "top_words": [{"name", "words"}], "measured_at"}``; None when never
    measured. ``top_words`` names the models as ``user`` is shown them (``shown_names``), only those
    ``user`` may see."""
    found = LeakMeasurement.objects.filter(task=task).first()
    if found is None:
        return None
    ids = [int(k) for k in found.top_words if str(k).isdigit()]
    models = list(RegisteredModel.objects.filter(task=task, pk__in=ids))
    visible = set(models_visible_to(user, task).filter(pk__in=ids).values_list("pk", flat=True))
    names = shown_names(user, task, models)
    return {
        "accuracy": found.accuracy,
        "low": found.low,
        "high": found.high,
        "chance": found.chance,
        "tested": found.tested,
        "models": found.n_models,
        "train_battles": found.train_battles,
        "test_battles": found.test_battles,
        "leaks": found.low is not None and found.chance is not None and found.low > found.chance,
        "reason": found.reason,
        "top_words": [
            {"name": names[pk], "words": [_readable_cue(w) for w in found.top_words.get(str(pk), [])]}
            for pk in sorted(visible)
            if found.top_words.get(str(pk))
        ],
        "measured_at": found.created_at,
    }
