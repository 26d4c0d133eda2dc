"""Writes of the arena (docs/benchmarking.md, "Arena"): a battle started on a prompt, both anonymous
models' answers stored, and the person's one vote.

    battle = start_battle(task=task, voter=user, prompt="...", client_token=token)
    battle.answer_a, battle.answer_b       # model names are not shown until the vote
    battle, recorded = vote(battle=battle, voter=user, vote="a")

The page and the API go through these two functions alike, so the rules are the same:

* **Who.** A signed-in person who may contribute to the task (``core.api.permissions.can_contribute``,
  then ``tasks.qualification.check_can_contribute`` with the ``validate`` action: a vote is a judgement
  of model outputs, as a verdict is, and writes no example).
* **Which pair.** Drawn at random (``core.pairwise.draw_pair``) among the task's ready generative models
  with the current ranking (``selectors.arena_ranking``): P(pair i, j) proportional to
  (w_i + w_j) / (1 + n_ij), w the interval widths and n_ij the pair's votes, so wide intervals and rarely
  played pairs come up more often, never a model against itself. The draw comes from the operating
  system's cryptographic source (``secrets.SystemRandom``), so the next pair cannot be worked out from the
  public ranking page. Which one is shown as A is drawn at random too, so a position bias of voters
  cancels out.
* **Stored once.** A prompt resent with the same ``client_token`` (a double click, a retried request)
  returns the battle already stored; a vote is recorded by a conditional ``UPDATE ... WHERE status =
  'ready'``, which succeeds for one request only, so a second tab is told its vote was already recorded.
* **A model that fails** (an error, a timeout, a refused key) fails the battle with why; no vote is
  taken on it, and no ranking changes.
"""

from __future__ import annotations

import logging
import random
import secrets
import uuid
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.api.permissions import can_contribute
from core.job_queue import enqueue
from core.leak_rate import leak_rate
from core.pairwise import draw_pair
from core.self_identification import named_terms
from core.text_rules import lone_surrogate_path, model_text_problem, normalise_newlines
from generative_bench.kinds import benchmarked
from models_registry.models import RegisteredModel
from models_registry.serving import (
    InferenceError,
    PromptTooLong,
    Together,
    admit,
    chat_stream,
    check_messages,
    fits,
)
from tasks import qualification
from tasks.models import Task

from ..models import Battle, LeakMeasurement
from . import selectors

logger = logging.getLogger(__name__)

#: A battle still ``answering`` this long after it was stored lost its answers (its process died).
STALE_SECONDS = 900.0
#: Finish reasons of an answer that did not end as the model meant it to: the battle fails (a voter would
#: compare a whole answer with a piece of one).
FAILED_FINISHES = ("error", "timeout", "cut_short")
#: Why the battle failed, said to the voter, when the answer's record names no error.
FAILED_BECAUSE = {"timeout": "it took too long", "cut_short": "it was cut short", "error": "it stopped"}


class ArenaError(Exception):
    """A battle or vote the rules refuse; ``code`` names the rule (``not_red_team``, ``blocked``,
    ``not_enough_models``, ``invalid``, ``too_long``, ``not_found``, ``not_ready``, ``already_voted``),
    the message says it to a person."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


def check_may_battle(task: Task, user) -> None:
    """Refuse ``user`` the arena of ``task``.

    Raises:
        ArenaError: ``not_red_team`` (not a red-teaming task), ``blocked`` (an account that may not
            contribute: blocked or inactive).
        tasks.qualification.NotQualified: the task's rules refuse them (block list, allow list, held for
            review, quiz, daily cap...), with its own code.
    """
    if not benchmarked(task.cfg):
        raise ArenaError("This task has no arena: it is not a red-teaming task.", code="not_red_team")
    if not can_contribute(user):
        raise ArenaError("Your account is blocked from voting in the arena.", code="blocked")
    qualification.check_can_contribute(task, user, qualification.VALIDATE, lock=False)


def clean_prompt(task: Task, prompt, *, what: str = "Your prompt") -> str:
    """``prompt`` as the models will read it (newlines normalised), refused as the red-teaming page refuses
    a message: not text, a lone surrogate, a control character, nothing visible, or over the task's
    length for its message field. ``what`` names it in the refusal ("Your next message").

    Raises:
        ArenaError: ``invalid``, with the reason.
    """
    if not isinstance(prompt, str):
        raise ArenaError(f"Write {what.lower().replace('your ', 'a ', 1)}.", code="invalid")
    if lone_surrogate_path(prompt) is not None:
        raise ArenaError(f"{what} holds a lone surrogate, which is not text.", code="invalid")
    prompt = normalise_newlines(prompt)
    cfg = task.cfg
    field = cfg.input_fields[0]
    problem = model_text_problem(prompt, what, cfg.max_length_of(field))
    if problem:
        raise ArenaError(problem, code="invalid")
    return prompt


def _clean_messages(task: Task, messages) -> list[dict]:
    """Messages given whole (``start_battle(messages=...)``): the chat format, ending with the user's, each
    text as a prompt is checked (``clean_prompt``)."""
    try:
        messages = check_messages(messages)
    except (InferenceError, TypeError, AttributeError) as exc:
        raise ArenaError(f"The messages are not a conversation: {exc}.", code="invalid") from None
    return [{"role": m["role"], "content": clean_prompt(task, m["content"])} for m in messages]


def fail_stale_battles(*, voter=None) -> int:
    """Mark failed the battles (of ``voter``, or everyone's) still ``answering`` ``STALE_SECONDS`` after
    they were stored: their process died, and no answer will come. Returns how many."""
    stale = Battle.objects.filter(
        status=Battle.Status.ANSWERING, created_at__lt=timezone.now() - timedelta(seconds=STALE_SECONDS)
    )
    if voter is not None:
        stale = stale.filter(voter=voter)
    return stale.update(
        status=Battle.Status.FAILED,
        error="The answers were lost (the server stopped while generating them); no vote is taken.",
    )


def _check_fits(model: RegisteredModel, messages: list[dict]) -> None:
    """Refuse a prompt a local model cannot read with room for its answer (a remote server says so itself,
    and the battle then fails)."""
    try:
        fits(model, messages)
    except PromptTooLong as refusal:
        raise ArenaError(f"The prompt is too long for the models: {refusal}.", code="too_long") from None


def _failure(model: RegisteredModel, exc: Exception) -> tuple[str, dict, str]:
    """``(text, record, error)`` of an answer that raised ``exc``: no text, no record, why."""
    if isinstance(exc, InferenceError):
        return "", {}, str(exc)
    logger.exception("arena: model %s failed", model.pk)
    return "", {}, f"{type(exc).__name__}: the model crashed"


def _outcome(generation) -> tuple[str, dict, str]:
    """``(text, generation record, error)`` of an answer that ended; ``error`` is empty unless its finish
    reason is one of ``FAILED_FINISHES``."""
    record = generation.as_dict()
    if generation.finish_reason in FAILED_FINISHES:
        return generation.text, record, generation.error or FAILED_BECAUSE[generation.finish_reason]
    return generation.text, record, ""


def _answers(models: list[RegisteredModel], messages: list[dict]) -> list[tuple[str, dict, str]]:
    """``(text, generation record, error)`` of each model's whole answer to ``messages``, in order,
    generated together (``serving.Together``: one batch for a local model, at once for remote servers).
    ``error`` is empty unless the answer failed (an exception, or a finish reason of ``FAILED_FINISHES``).
    When one raises, the others are stopped (the battle fails anyway): each keeps what came, with no
    error of its own, so that the battle's error names the answer that failed."""
    results: list[tuple[str, dict, str] | None] = [None] * len(models)
    streams: list = []
    stopped: set[int] = set()
    try:
        for model in models:
            streams.append(chat_stream(model, messages))
        together = Together(streams)
        try:
            for _ in together:
                pass
        except Exception as exc:  # noqa: BLE001 - any crash of one model fails its battle, not the request
            failed = together.current
            results[failed] = _failure(models[failed], exc)
            stopped = set(together.unfinished) - {failed}
    except Exception as exc:  # noqa: BLE001 - chat_stream refused the next model before it was asked
        results[len(streams)] = _failure(models[len(streams)], exc)
        stopped = set(range(len(streams)))
    finally:
        for stream in streams:
            stream.close()  # a stream stopped early records what came (finish reason cut_short)
    for index, stream in enumerate(streams):
        if results[index] is None and stream.generation is not None:
            text, record, error = _outcome(stream.generation)
            results[index] = (text, record, "" if index in stopped else error)
    return [result or ("", {}, "") for result in results]


def start_battle(
    *,
    task: Task,
    voter,
    messages: list[dict] | None = None,
    prompt: str | None = None,
    source_example=None,
    client_token: uuid.UUID | None = None,
    rng: random.Random | None = None,
) -> Battle:
    """Start a battle in ``task``'s arena on one prompt, given as ``prompt`` (the voter's text),
    ``messages`` (a whole conversation in the chat format) or ``source_example`` (a settled conversation
    of the task: its passage as the system message and its first user message, ``selectors.prompt_messages``),
    exactly one of them. Two models are drawn (``core.pairwise.draw_pair`` over ``selectors.arena_ranking``)
    and their sides drawn too, with ``rng``: by default ``secrets.SystemRandom()``, unpredictable; a test
    passes a seeded ``random.Random``. Both answer in turn
    (``models_registry.generative.chat_stream(...).drain()``); the battle is stored ``ready`` with both
    answers, or ``failed`` with why when a model failed (no vote is taken on it).

    Returns the battle; the one already stored for a ``client_token`` resent by ``voter`` (whatever its
    state: still answering when the first request is not done).

    Raises:
        ArenaError: see ``check_may_battle``; ``invalid`` (no prompt or more than one, a refused text, an
            example that is not a settled conversation of the task), ``too_long`` (over a local model's
            context, with the counts), ``not_enough_models`` (fewer than two ready generative models).
        QueueFull: the line for a local model's generation slot is full (``generative.admit``); nothing
            is stored. The second answer joins the line again once the first has ended: should the line
            be full then, the battle fails with that message.
        tasks.qualification.NotQualified: the task's rules refuse the voter.
    """
    check_may_battle(task, voter)
    if client_token is not None:
        existing = Battle.objects.filter(voter=voter, client_token=client_token).first()
        if existing is not None:
            return existing
    given = [x is not None for x in (messages, prompt, source_example)]
    if sum(given) != 1:
        raise ArenaError("Give one prompt: your own, or one from a round.", code="invalid")
    round_ = task.current_round
    if source_example is not None:
        if selectors.prompt_example(task, source_example.pk) is None:
            raise ArenaError("That example is not a settled conversation of this task.", code="invalid")
        try:
            messages = selectors.prompt_messages(source_example)
        except ValueError:
            raise ArenaError("That conversation has no message to use.", code="invalid") from None
        round_ = source_example.round
    elif prompt is not None:
        messages = [{"role": "user", "content": clean_prompt(task, prompt)}]
    else:
        messages = _clean_messages(task, messages)
    models = {m.pk: m for m in selectors.arena_models(task)}
    if len(models) < 2:
        raise ArenaError(
            f"The arena needs two ready generative models; this task has {len(models)}.",
            code="not_enough_models",
        )
    # Unpredictable in production: a seeded generator's next pair could be worked out from earlier ones.
    rng = rng if rng is not None else secrets.SystemRandom()
    first, second = draw_pair(selectors.arena_ranking(task), sorted(models), rng=rng)
    if first == second:  # draw_pair's promise; the table's constraint would refuse it anyway
        raise ArenaError("The arena picked one model twice; try again.", code="not_enough_models")
    model_a, model_b = (
        (models[first], models[second]) if rng.random() < 0.5 else (models[second], models[first])
    )
    for model in (model_a, model_b):
        _check_fits(model, messages)
    admit(model_a, model_b, who=voter.pk)  # a full line for a local model refuses before the battle is stored
    fail_stale_battles(voter=voter)
    try:
        with transaction.atomic():
            battle = Battle.objects.create(
                task=task,
                round=round_,
                source_example=source_example,
                voter=voter,
                messages=messages,
                model_a=model_a,
                model_b=model_b,
                client_token=client_token,
            )
    except IntegrityError:
        # The same client_token sent twice at once: the other request stored the battle first.
        existing = Battle.objects.filter(voter=voter, client_token=client_token).first()
        if existing is None:
            raise
        return existing
    return _generate(battle)


#: How many times an answer that named a model is asked again under the ``regenerate`` rule before the
#: battle is marked not anonymous (a greedy model says the same again, so more would only cost time).
REGENERATE_TRIES = 1


def _generate(battle: Battle) -> Battle:
    """Ask both models of ``battle`` for their answers, together (``_answers``), and store them (or why
    one failed). An answer that names a model (``identity_check``) is asked again, alone, up to
    ``REGENERATE_TRIES`` times under the task's ``regenerate`` rule; one that still does, or any under the
    ``mark`` rule, marks the battle not anonymous."""
    updates: dict = {}
    terms = selectors.identity_terms(battle.task)
    retries = REGENERATE_TRIES if battle.task.cfg.arena_on_identity == "regenerate" else 0
    leaks, regenerated = [], 0
    first = _answers([battle.model_a, battle.model_b], battle.messages)
    for (side, model), answer in zip((("a", battle.model_a), ("b", battle.model_b)), first, strict=True):
        text, record, error = answer
        named = [] if error else identity_check(text, battle.messages, terms)
        for _ in range(retries):
            if not named:
                break
            regenerated += 1
            text, record, error = _answers([model], battle.messages)[0]
            named = [] if error else identity_check(text, battle.messages, terms)
        updates[f"answer_{side}"], updates[f"generation_{side}"] = text, record
        if error:
            updates["status"] = Battle.Status.FAILED
            updates["error"] = (
                f"Answer {side.upper()} failed: {error}. No vote is taken on this battle; start another."
            )
            break
        if named:
            leaks.append(f"answer {side.upper()} named {', '.join(named)}")
    else:
        updates["status"] = Battle.Status.READY
        if not (updates["answer_a"].strip() or updates["answer_b"].strip()):
            updates["status"] = Battle.Status.FAILED
            updates["error"] = (
                "Both answers were empty, so there is nothing to compare. No vote is taken; start another."
            )
    updates["regenerated"] = regenerated
    if battle.parent_id is not None and not battle.parent.anonymous:
        # The voter already saw which side named which model; the sides stay the same turn after turn.
        earlier = battle.parent.identity_leak
        leaks.insert(0, f"the turn it continues was not anonymous: {earlier[:1].lower()}{earlier[1:]}")
    if leaks and updates["status"] == Battle.Status.READY:
        updates["anonymous"] = False
        leak = "; ".join(leaks)
        updates["identity_leak"] = leak[0].upper() + leak[1:]
    # Conditional: a battle marked stale meanwhile (fail_stale_battles) stays failed.
    Battle.objects.filter(pk=battle.pk, status=Battle.Status.ANSWERING).update(**updates)
    battle.refresh_from_db()
    return battle


def identity_check(answer: str, messages: list[dict], terms: list) -> list[str]:
    """The terms of ``terms`` (``selectors.identity_terms``) that ``answer`` names
    (``core.self_identification.named_terms``), the prompt being the system passage and the user's
    messages of ``messages``: the models' own earlier answers are not the user's question, so a name a
    model said in an earlier turn exempts nothing."""
    prompt = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") in ("system", "user"))
    return named_terms(answer, terms, prompt=prompt)


def vote(*, battle: Battle, voter, vote: str, follow_up: str | None = None) -> tuple[Battle, bool]:
    """Record ``voter``'s vote on their ``battle``: ``a`` (A is better), ``b``, ``tie`` or ``both_bad``.

    Without ``follow_up`` the conversation ends: its battles are revealed (the model names may be shown).
    With ``follow_up`` (the voter's next message; a vote per turn, FastChat issue #3210) the vote is
    recorded, the names stay hidden, and the next turn starts at once (``continue_battle``): the same two
    models, on the same sides, answer ``follow_up`` after the conversation so far with the answer the voter
    preferred kept (A's on a tie). It is refused, before anything is stored, on the task's last turn
    (``red_team.max_turns``), after "both are bad" (no answer to keep), or for a message refused as a
    prompt is (``clean_prompt``).

    Once only: the vote is stored by ``UPDATE ... WHERE status = 'ready'``, so of two requests at once (a
    double click, two tabs) exactly one records it (and starts the next turn).

    Returns:
        ``(battle, recorded)``: the battle as stored (its vote the one recorded; ``battle.continuation``
        the next turn when one was started), and whether this call recorded it.

    Raises:
        ArenaError: ``not_found`` (another user's battle, answered as a missing one), ``blocked``,
            ``invalid`` (not one of the four votes; a follow-up refused), ``not_ready`` (still answering,
            or failed).
        QueueFull: the next turn's local model has a full line; the vote is recorded all the same, and
            the conversation ends there (revealed).
        tasks.qualification.NotQualified: the task's rules refuse the voter now.
    """
    if battle.voter_id != getattr(voter, "pk", None):
        raise ArenaError("No such battle.", code="not_found")
    check_may_battle(battle.task, voter)
    if vote not in Battle.Vote.values:
        raise ArenaError("Choose A is better, B is better, Tie or Both are bad.", code="invalid")
    if follow_up is not None:
        follow_up = _check_follow_up(battle, vote, follow_up)
    recorded = bool(
        Battle.objects.filter(pk=battle.pk, voter=voter, status=Battle.Status.READY).update(
            status=Battle.Status.VOTED, vote=vote, voted_at=timezone.now()
        )
    )
    battle.refresh_from_db()
    if not recorded and battle.status != Battle.Status.VOTED:
        if battle.status == Battle.Status.FAILED:
            raise ArenaError(battle.error or "This battle failed; no vote is taken.", code="not_ready")
        raise ArenaError("The models are still answering; vote once both answers are here.", code="not_ready")
    if recorded:
        if follow_up is None:
            _reveal(battle)
        else:
            try:
                continue_battle(battle, follow_up)
            except Exception:
                _reveal(battle)  # the conversation ends here: its names may be shown
                raise
        battle.refresh_from_db()
    return battle, recorded


def _check_follow_up(battle: Battle, vote: str, follow_up) -> str:
    """``follow_up`` as the models will read it, or why it cannot continue ``battle`` (``invalid``)."""
    if battle.turn >= battle.task.cfg.max_turns:
        raise ArenaError(
            f"This conversation has had its {battle.task.cfg.max_turns} turns: vote without a next message.",
            code="invalid",
        )
    if vote == Battle.Vote.BOTH_BAD:
        raise ArenaError(
            "Your next message cannot continue this conversation: both answers were bad, so there is none to "
            "keep. Vote without a next message.",
            code="invalid",
        )
    follow_up = clean_prompt(battle.task, follow_up, what="Your next message")
    messages = _next_messages(battle, vote, follow_up)
    for model in (battle.model_a, battle.model_b):
        _check_fits(model, messages)  # a conversation too long is refused before the vote is stored
    return follow_up


def _next_messages(battle: Battle, vote: str, follow_up: str) -> list[dict]:
    """The next turn's messages: ``battle``'s, the answer ``vote`` preferred (A's on a tie), ``follow_up``."""
    kept = battle.answer_b if vote == Battle.Vote.B else battle.answer_a
    return [*battle.messages, {"role": "assistant", "content": kept}, {"role": "user", "content": follow_up}]


def _chain(battle: Battle) -> list[int]:
    """The ids of ``battle`` and of the earlier turns it continues."""
    ids, current = [], battle
    while current is not None:
        ids.append(current.pk)
        current = current.parent
    return ids


def _reveal(battle: Battle) -> None:
    """Let the model names of ``battle``'s conversation be shown (every turn up to it)."""
    Battle.objects.filter(pk__in=_chain(battle)).update(revealed=True)


def continue_battle(battle: Battle, follow_up: str) -> Battle:
    """The next turn of the voted ``battle`` (``vote``'s ``follow_up``, already checked by
    ``_check_follow_up``, the context's fit included, before the vote was stored): a battle of the same
    voter, models and sides, ``turn`` one more, whose messages are ``battle``'s, the preferred answer (A's
    on a tie) and ``follow_up``; both models answer as in ``start_battle``. A next turn already started
    (a second request) is returned as it is. A next turn that fails ends the conversation (revealed).

    Raises:
        QueueFull: a local model's line is full; nothing is stored.
    """
    existing = Battle.objects.filter(parent=battle).first()
    if existing is not None:
        return existing
    messages = _next_messages(battle, battle.vote, follow_up)
    admit(battle.model_a, battle.model_b, who=battle.voter_id)
    try:
        with transaction.atomic():
            following = Battle.objects.create(
                task=battle.task,
                round=battle.round,
                source_example=battle.source_example,
                voter=battle.voter,
                messages=messages,
                model_a=battle.model_a,
                model_b=battle.model_b,
                parent=battle,
                turn=battle.turn + 1,
            )
    except IntegrityError:  # the other request of a double click started it first
        return Battle.objects.get(parent=battle)
    following = _generate(following)
    if following.status == Battle.Status.FAILED:
        _reveal(battle)
    return following


def hold_flagged_voters(*, task, checks, names: dict[int, str]) -> list[int]:
    """Hold for review on ``task`` every voter ``checks`` (``selectors.VoterChecks``) flags, by either
    test, through the task's hold flow (``tasks.qualification.hold_for_review``): their votes leave the
    ranking until an owner releases them. The reason names the test, its figures and the model pushed
    (``VoterChecks.reasons``; ``names``: model id -> name). Returns the ids of the voters this call held
    (one already held keeps their first reason)."""
    reasons = checks.reasons(names)
    users = get_user_model().objects.in_bulk(list(reasons))
    held = []
    for voter in sorted(reasons, key=str):
        if voter in users and qualification.hold_for_review(
            task=task, user=users[voter], reason=reasons[voter]
        ):
            held.append(voter)
    return held


def measure_leak(task: Task, *, seed: int = 0) -> LeakMeasurement:
    """Measure the leak rate of ``task``'s arena (``core.leak_rate.leak_rate`` on
    ``selectors.revealed_answers``; ``seed`` draws the held-out battles) and store it. Returns the stored
    measurement (its figures None, with the reason, when too few battles were voted)."""
    found = leak_rate(selectors.revealed_answers(task), seed=seed)
    return LeakMeasurement.objects.create(
        task=task,
        accuracy=found.accuracy,
        low=found.low,
        high=found.high,
        chance=found.chance,
        tested=found.tested,
        n_models=found.models,
        train_battles=found.train_battles,
        test_battles=found.test_battles,
        top_words=found.top_words,
        reason=found.reason,
    )


def request_leak_measurement(task: Task) -> bool:
    """Queue ``jobs.measure_leak_job`` for ``task`` (the ranking page's button). Returns False when the
    broker could not be reached (``core.job_queue.enqueue``)."""
    return enqueue("generative_bench.jobs.measure_leak_job", task.pk, task_name=f"arena-leak-{task.pk}")
