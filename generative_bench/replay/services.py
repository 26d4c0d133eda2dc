"""Writes of replays (docs/benchmarking.md, "Replay" and "Rating replayed answers"): ask for a replay
of a round against a generative model (``request_replay``; the job ``jobs.run_replay_job`` does the
work), cancel it, and open its answers for rating by people (``open_rating``).

    replay = request_replay(round_=round_, model=model, target_turns="regenerate", user=owner)
    ...                                  # the job answers every settled prompt of the round
    open_rating(replay=replay, user=owner)   # validators judge the answers by the rubric
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Example
from core.job_queue import enqueue
from generative_bench.kinds import benchmarked
from models_registry.models import RegisteredModel
from tasks.models import Round

from ..models import Replay, ReplayAnswer
from . import selectors

#: The job's dotted path (re-exported by generative_bench/jobs.py).
JOB = "generative_bench.jobs.run_replay_job"
#: Model sources that are generative models (a red-teaming task registers no other kind).
GENERATIVE_SOURCES = (RegisteredModel.Source.LOCAL_DIR, RegisteredModel.Source.CHAT_ENDPOINT)


class ReplayError(Exception):
    """A replay request or rating the rules refuse; ``code`` names the rule (the API's status follows
    it: ``api.STATUS_OF_CODE``), the message says it to a person."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


def _enqueue(replay_id: int) -> None:
    enqueue(JOB, replay_id, task_name=f"replay {replay_id}")


def check_replayable(*, round_: Round, model: RegisteredModel, target_turns: str) -> None:
    """Refuse what ``request_replay`` refuses before it looks at stored replays.

    Raises:
        ReplayError: ``not_red_team`` (the round's task is not a red-teaming task), ``other_task`` (the
            model is another task's), ``not_generative`` (not a local or chat-server model), ``not_ready``
            (its check has not passed), ``invalid`` (``target_turns`` is neither ``keep`` nor
            ``regenerate``).
    """
    task = round_.task
    if not benchmarked(task.cfg):
        raise ReplayError(
            f"Round {round_.number} of {task.name} is not a red-teaming round: only red-teaming rounds "
            "are replayed.",
            code="not_red_team",
        )
    if model.task_id != task.pk:
        raise ReplayError(f"Model {model.name} is a model of another task.", code="other_task")
    if model.source not in GENERATIVE_SOURCES:
        raise ReplayError(f"Model {model.name} is not a generative model.", code="not_generative")
    if model.status != RegisteredModel.Status.READY:
        raise ReplayError(
            f"Model {model.name} is not ready ({model.get_status_display().lower()}): it is replayed once "
            "its check has passed.",
            code="not_ready",
        )
    if target_turns not in Replay.TargetTurns.values:
        raise ReplayError(
            f"target_turns must be one of {', '.join(Replay.TargetTurns.values)}.", code="invalid"
        )


def request_replay(
    *, round_: Round, model: RegisteredModel, target_turns: str = "keep", user=None, queue: bool = True
) -> Replay:
    """Replay ``round_``'s settled prompts against ``model`` (docs/benchmarking.md, "Replay"): the replay
    of (round, model, target_turns), created on the first request, is queued, and its job
    (``jobs.run_replay_job``) is queued once this transaction commits; with ``queue`` False it is not,
    and the caller runs the job itself (the demo's set-up runs it inline beside a live job worker).

    Asking again for a replay that is done, failed or cancelled (or one left ``running`` by a worker that
    was killed: ``selectors.is_stale``) queues the same row again: its job skips the answers already
    stored and tries the failed ones again. A double click or two owners at once: one request queues it,
    the other is refused with ``already_running``.

    Returns:
        The ``Replay``, status ``queued``.

    Raises:
        ReplayError: as ``check_replayable``, or ``already_running`` when the replay is queued or running.
    """
    check_replayable(round_=round_, model=model, target_turns=target_turns)
    with transaction.atomic():
        try:
            with transaction.atomic():  # a savepoint: a lost race on the unique row must not end the outer
                replay, created = Replay.objects.get_or_create(
                    round=round_,
                    model=model,
                    target_turns=target_turns,
                    defaults={"requested_by": user, "progress": "queued"},
                )
        except IntegrityError:
            replay, created = Replay.objects.get(round=round_, model=model, target_turns=target_turns), False
        if not created:
            # The row lock orders two requests for one replay: the second sees the first's "queued".
            replay = Replay.objects.select_for_update().get(pk=replay.pk)
            if replay.status in (Replay.Status.QUEUED, Replay.Status.RUNNING) and not selectors.is_stale(
                replay
            ):
                raise ReplayError(
                    f"This replay is already {replay.get_status_display().lower()} ({replay.progress or 'no progress yet'}).",
                    code="already_running",
                )
            replay.status = Replay.Status.QUEUED
            replay.error = ""
            replay.progress = "queued again"
            replay.finished_at = None
            if user is not None:
                replay.requested_by = user
            replay.save(update_fields=["status", "error", "progress", "finished_at", "requested_by"])
        replay_id = replay.pk
        if queue:
            transaction.on_commit(lambda: _enqueue(replay_id))
    return replay


def cancel_replay(*, replay: Replay) -> bool:
    """Cancel ``replay`` when it is queued or running; its job stops before its next batch (answers
    stored so far stay). Returns whether it was cancelled."""
    return bool(
        Replay.objects.filter(pk=replay.pk, status__in=[Replay.Status.QUEUED, Replay.Status.RUNNING]).update(
            status=Replay.Status.CANCELLED, progress="cancelled", finished_at=timezone.now()
        )
    )


def rating_messages(answer: ReplayAnswer) -> list[dict]:
    """The conversation a rating example holds (its ``inputs["messages"]``): the user and assistant
    messages ``answer``'s model was sent for its last answer (the context's system message left out:
    it is the example's context), then that answer."""
    chat = [
        {"role": m["role"], "content": m["content"]}
        for m in answer.messages
        if m.get("role") in ("user", "assistant")
    ]
    return [*chat, {"role": "assistant", "content": answer.answer}]


def open_rating(*, replay: Replay, user) -> int:
    """Serve ``replay``'s answered conversations to validators for rubric judgement (docs/benchmarking.md,
    "Rating replayed answers"): each ``ok`` conversation answer without one gets a rating example,
    linked as its ``rating_example``. Idempotent: a second call adds only what is new (answers stored
    since), and two at once are ordered by the replay's row lock.

    A rating example is an ``Example`` of ``replay.round`` with source ``rating``, no annotator, the
    replayed conversation's context, ``inputs = {"messages": rating_messages(answer)}`` (the human turns
    and the model's answers, ending in the replayed answer), an empty ``target`` (no author answered the
    rubric), ``model_wrong`` None, status ``pending`` and ``metadata = {"mode": "conversation", "turns":
    n}``. It names no model: validators never learn which model answered. The validate page serves it
    among the round's other examples and gold items (``validation.selectors``), and quorum settles it
    as any conversation: with ``model_wrong`` None a validator's verdict is ``correct`` when their rubric
    answers say the output did not fail (``validation.services.rubric_verdict``), so **settled
    validated_incorrect means people judged the replayed answer failed**. Rating examples are not
    collected data: they stay out of MER, vMER, the attack success rate, the annotators' statistics,
    "My examples", exports, releases and scoring datasets.

    Returns:
        How many rating examples were created.

    Raises:
        ReplayError: ``not_owner`` when ``user`` does not own the replay's task.
    """
    task = replay.round.task
    if not task.is_owner(user):
        raise ReplayError("Only the task's owners can open a replay for rating.", code="not_owner")
    created = 0
    with transaction.atomic():
        Replay.objects.select_for_update().filter(pk=replay.pk).first()
        answers = (
            ReplayAnswer.objects.filter(
                replay=replay,
                status=ReplayAnswer.Status.OK,
                rating_example__isnull=True,
                example__metadata__mode="conversation",
            )
            .select_related("example")
            .order_by("pk")
        )
        for answer in answers:
            messages = rating_messages(answer)
            example = Example.objects.create(
                round=replay.round,
                context_id=answer.example.context_id,
                annotator=None,
                source=Example.Source.RATING,
                inputs={"messages": messages},
                target={},
                model_wrong=None,
                prediction_status=Example.PredictionStatus.NONE,
                status=Example.Status.PENDING,
                metadata={
                    "mode": "conversation",
                    "turns": sum(1 for m in messages if m["role"] == "user"),
                },
            )
            # An update, not save(): the answer's updated_at is its job's, not this link's.
            ReplayAnswer.objects.filter(pk=answer.pk).update(rating_example=example)
            created += 1
    return created
