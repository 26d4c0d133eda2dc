"""Red-teaming conversations: an annotator's turns with a round's generative target (docs/generative.md,
"Conversations").

    conversation = start_conversation(round_=round_, annotator=user, context=context)
    stream = send_turn(conversation=conversation, annotator=user, prompt="...", client_token=token)
    for piece in stream: ...     # the target's answer as it is generated
    stream.turn                  # the stored Turn, answer and generation record included

Every turn enters here, from the page and the API alike. The rules:

* **In order, none lost.** A turn is numbered under the conversation's row lock. A turn sent while the
  previous answer is still being generated (a second tab) waits for it, up to ``WAIT_SECONDS``, and is
  then answered with the whole conversation so far.
* **Stored once.** A turn resent with the same ``client_token`` (a double click, a retried request)
  returns the stored turn instead of a new one.
* **Refused before anything is stored:** a text the task's rules refuse, a conversation over the task's
  ``max_turns``, one whose prompt no longer fits the local target's context (with the counts), or a
  local target whose line is full (``QueueFull``: 503, docs/serving.md).
* **An answer that breaks keeps what came.** A target that fails, stops or times out mid-answer leaves
  its partial answer stored with the finish reason; the reader leaving early stores it with finish
  reason ``cut_short``.

``submit_conversation`` then turns the conversation into an example of its round, judged by its author
with the task's rubric.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import connections, transaction
from django.utils import timezone

from annotation import signals
from annotation.chat_format import context_message
from annotation.models import CandidateRating, Conversation, Example, Turn
from core.api.permissions import can_contribute
from core.processes import gone, this_process
from core.text_rules import lone_surrogate_path, model_text_problem, normalise_newlines
from models_registry.models import RegisteredModel
from models_registry.serving import (
    AnswerStream,
    InferenceError,
    PromptTooLong,
    Together,
    admit,
    answer_cost,
    chat_stream,
    decoding_of,
    fits,
)
from tasks import qualification
from tasks import selectors as task_selectors
from tasks.kinds import conversational
from tasks.models import Context, Round

from . import budget, selectors

#: How long a turn waits for the previous answer of its conversation before it is refused, in seconds.
WAIT_SECONDS = 120.0
#: An answer still ``answering`` this long after it was last written is taken as lost, whoever answers
#: it (a process on another machine, whose death cannot be seen from here).
STALE_SECONDS = 900.0
#: While an answer streams, its text so far is written to its turn at most this often, in seconds: a
#: process killed mid-answer leaves what came.
CHECKPOINT_SECONDS = 5.0
#: The reason stored with an answer whose process died before it ended.
LOST = "the answer was lost: the process answering it stopped before it ended"


class ConversationError(Exception):
    """A turn or conversation the rules refuse; ``code`` names the rule, the message says it to a person."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


def _ready_targets(round_: Round):
    """The round targets of ``round_`` whose model is ready, by position, their models joined."""
    return (
        round_.targets.select_related("model")
        .filter(model__status=RegisteredModel.Status.READY)
        .order_by("position", "id")
    )


def ready_models(round_: Round) -> list[RegisteredModel]:
    """The ready target models of ``round_``, by position."""
    return [t.model for t in _ready_targets(round_)]


def round_target(round_: Round) -> RegisteredModel:
    """The first ready target of ``round_`` (by position), which red-teamers talk to.

    Raises:
        ConversationError: ``no_target`` when the round has none ready.
    """
    target = _ready_targets(round_).first()
    if target is None:
        raise ConversationError("This round has no ready target model to talk to yet.", code="no_target")
    return target.model


def check_context(round_: Round, context: Context | None, *, what: str) -> None:
    """Refuse writing ``what`` (e.g. "A conversation") in ``round_`` on ``context``: a context of another
    round, or none where the task needs one (``TaskConfig.context_required``). The one check of
    conversations and multiple-choice items alike, so neither can be stored without its passage.

    Raises:
        ConversationError: ``bad_context``, saying which.
    """
    if context is not None and context.round_id != round_.pk:
        raise ConversationError("That passage is not one of this round's.", code="bad_context")
    if context is None and round_.task.cfg.context_required:
        raise ConversationError(
            f"{what} needs one of this round's passages (its context); none was given.", code="bad_context"
        )


def start_conversation(*, round_: Round, annotator, context: Context | None = None) -> Conversation:
    """Open a conversation of ``annotator`` with the first ready target of ``round_`` (on ``context``
    when the task has contexts); their other open conversations in the round without a message are
    marked abandoned, and one with messages refuses (``open_conversation``): it is left on the page
    ("leave it unjudged", ``abandon_conversation``) or judged, never dropped by another tab or tool.

    Raises:
        ConversationError: a user who may not contribute (``blocked``), not a red-teaming task
            (``not_red_team``), a round that is not open (``round_closed``), a context of another round
            or none where the task needs one (``bad_context``, ``check_context``), no ready target
            (``no_target``), or an open conversation with messages
            (``open_conversation``, naming it).
        tasks.qualification.NotQualified: the task's rules refuse the annotator (tutorial, quiz, cap...).
    """
    if not can_contribute(annotator):
        raise ConversationError("Your account cannot write examples.", code="blocked")
    task = round_.task
    if not conversational(task.cfg):
        raise ConversationError("This task is not a red-teaming task.", code="not_red_team")
    if not round_.is_open:
        raise ConversationError("This round is closed; no new conversations.", code="round_closed")
    check_context(round_, context, what="A conversation")
    qualification.check_can_contribute(task, annotator, qualification.WRITE, lock=False)
    model = round_target(round_)
    side_by_side = task.cfg.side_by_side or 0
    if side_by_side:
        candidates_of(round_, side_by_side)  # too few ready targets refuse before anything is stored
    with transaction.atomic():
        open_ = Conversation.objects.select_for_update().filter(
            round=round_, annotator=annotator, status=Conversation.Status.OPEN
        )
        # One with messages is someone's work (another tab, a tool): never dropped silently.
        held = open_.filter(turns__isnull=False).order_by("-id").first()
        if held is not None:
            raise ConversationError(
                f"You have a conversation open (number {held.pk}) with messages, perhaps in another tab "
                "(reload the red-teaming page to see it): judge its answers, or leave it unjudged, before "
                "starting another.",
                code="open_conversation",
            )
        open_.update(status=Conversation.Status.ABANDONED)
        return Conversation.objects.create(
            round=round_, annotator=annotator, model=model, context=context, side_by_side=side_by_side
        )


def candidates_of(round_: Round, k: int) -> list[RegisteredModel]:
    """The ready targets of ``round_`` that may answer a first message side by side, by position; at
    least ``k`` of them.

    Raises:
        ConversationError: ``too_few_models``, with the counts, when the round has fewer than ``k``.
    """
    ready = ready_models(round_)
    if len(ready) < k:
        raise ConversationError(
            f"This task has {k} models answer each first message side by side, but round {round_.number} "
            f"has {len(ready)} ready target model{'' if len(ready) == 1 else 's'}; nothing was stored. "
            "The task owner must add targets to the round or lower red_team.side_by_side.models.",
            code="too_few_models",
        )
    return ready


def answering_model(turn: Turn) -> RegisteredModel:
    """The model that answers ``turn``: its own (a side-by-side answer), else its conversation's."""
    return turn.model if turn.model_id else turn.conversation.model


def thread(conversation: Conversation, turns: list[Turn]) -> list[Turn]:
    """The turns of ``conversation``'s one thread, in order: every turn that is not a side-by-side
    answer, and of those only the one the writer chose (none before they chose)."""
    return [t for t in turns if t.slot is None or t.pk == conversation.chosen_turn_id]


def abandon_conversation(*, conversation: Conversation, annotator) -> bool:
    """Leave ``conversation`` unjudged ("Start a new conversation"); True when it was open. Its turns stay
    stored (they count as spent model calls, not as attempts). Another user's conversation: False."""
    if conversation.annotator_id != getattr(annotator, "pk", None):
        return False
    return bool(
        Conversation.objects.filter(pk=conversation.pk, status=Conversation.Status.OPEN).update(
            status=Conversation.Status.ABANDONED
        )
    )


def messages_of(conversation: Conversation, turns: list[Turn], prompt: str | None = None) -> list[dict]:
    """The chat ``messages`` the target reads: the context (a system message naming each context field,
    e.g. "Passage: ..."), then each earlier turn that was answered (user, assistant), then ``prompt``."""
    messages: list[dict] = []
    if conversation.context_id:
        system = context_message(conversation.round.task.cfg, conversation.context)
        if system:
            messages.append(system)
    for turn in turns:
        if turn.status == Turn.Status.ANSWERED:
            messages += [
                {"role": "user", "content": turn.prompt},
                {"role": "assistant", "content": turn.answer},
            ]
    if prompt is not None:
        messages.append({"role": "user", "content": prompt})
    return messages


def _clean_prompt(conversation: Conversation, prompt) -> str:
    if not isinstance(prompt, str):
        raise ConversationError("Write a message.", code="invalid")
    if lone_surrogate_path(prompt) is not None:
        raise ConversationError("Your message holds a lone surrogate, which is not text.", code="invalid")
    prompt = normalise_newlines(prompt)
    cfg = conversation.round.task.cfg
    field = cfg.input_fields[0]
    problem = model_text_problem(prompt, field.get("label", "Your message"), cfg.max_length_of(field))
    if problem:
        raise ConversationError(problem, code="invalid")
    return prompt


def is_lost(turn: Turn) -> bool:
    """True for a turn still ``answering`` whose process is gone (``core.processes.gone``: on this
    machine, known at once) or that nothing has written for ``STALE_SECONDS``."""
    if turn.status != Turn.Status.ANSWERING:
        return False
    return gone(turn.answered_by) or (time.time() - turn.updated_at.timestamp()) > STALE_SECONDS


def end_lost_turn(turn: Turn, model: RegisteredModel) -> None:
    """End a lost turn (``is_lost``) as its process would have: the text it last wrote kept as an answer
    with finish reason ``error`` and ``LOST`` as the reason, or ``failed`` when none came; its
    reservation charged (its tokens were never counted; ``budget.settle``, once)."""
    if turn.answer:
        turn.status = Turn.Status.ANSWERED
        turn.generation = {"text": turn.answer, "finish_reason": "error", "model": model.name, "error": LOST}
    else:
        turn.status = Turn.Status.FAILED
    turn.error = LOST
    turn.save(update_fields=["status", "generation", "error", "updated_at"])
    budget.settle(turn, model)


def _check_fits(model: RegisteredModel, messages: list[dict]) -> None:
    """Refuse a conversation the local ``model`` cannot read with room for its answer (a remote model's
    server says so itself)."""
    try:
        fits(model, messages)
    except PromptTooLong as refusal:
        raise ConversationError(str(refusal), code="too_long") from None


#: Draws the models of a side-by-side first message: the operating system's randomness, so that nobody
#: can predict (or, with a seed, steer) which models a person meets.
_DRAW = random.SystemRandom()


def _store_first_answers(
    locked: Conversation, annotator, prompt: str, client_token: uuid.UUID | None
) -> tuple[list[Turn], list[dict]]:
    """Store a side-by-side first message: ``locked.side_by_side`` of the round's ready targets drawn at
    random (``candidates_of``), in a random order of slots, one turn each (index 0, its slot and model;
    the client token on slot 0), each reserved on the budget at its own model's prices. Returns the turns
    and the messages they answer. Runs under ``locked``'s row lock, in ``send_turn``'s transaction: a
    refusal of any of them stores none.

    Raises:
        ConversationError: ``too_few_models``, ``too_long`` (a drawn local model cannot read it) or
            ``budget``.
        QueueFull: a drawn local model's line is full.
    """
    drawn = _DRAW.sample(candidates_of(locked.round, locked.side_by_side), locked.side_by_side)
    messages = messages_of(locked, [], prompt)
    for model in drawn:
        _check_fits(model, messages)
    # A place in line for each local answer, or a refusal before anything is stored.
    admit(*drawn, who=annotator.pk)
    turns = [
        Turn.objects.create(
            conversation=locked,
            index=0,
            slot=slot,
            model=model,
            prompt=prompt,
            client_token=client_token if slot == 0 else None,
            answered_by=this_process(),
        )
        for slot, model in enumerate(drawn)
    ]
    try:  # every answer's worst case at once: the message is answered whole or refused whole
        budget.reserve_answers(
            annotator=annotator,
            messages=messages,
            answers=[(turn, turn.model, decoding_of(turn.model).max_new_tokens) for turn in turns],
        )
    except budget.BudgetExceeded as refusal:
        raise ConversationError(str(refusal), code="budget") from None
    return turns, messages


def send_turn(
    *,
    conversation: Conversation,
    annotator,
    prompt,
    client_token: uuid.UUID | None = None,
    wait_seconds: float = WAIT_SECONDS,
) -> TurnStream | CandidateStreams:
    """Store ``prompt`` as the next turn of ``conversation`` and return the stream of the target's answer.

    A resent ``client_token`` returns a stream over the stored turn (its answer as one piece once it is
    there). Waits up to ``wait_seconds`` for an answer still being generated (see the module's rules).

    The first message of a side-by-side conversation (``Conversation.side_by_side``) is answered by that
    many of the round's targets (``_store_first_answers``): the return is then a ``CandidateStreams``
    over their answers, one after another; a later message waits for the writer's ratings and choice
    (``side_by_side.rate_answers``) and goes to the chosen model.

    Raises:
        ConversationError: another user's conversation (``not_found``, as for one that does not exist),
            one that is not open (``not_open``), a round closed meanwhile (``round_closed``), a refused
            text (``invalid``), ``max_turns`` reached
            (``max_turns``), a conversation the target cannot read (``too_long``), the previous answer
            still being generated after ``wait_seconds`` (``busy``), side-by-side answers not yet rated
            and chosen (``choose_first``) or too few targets for them (``too_few_models``).
        QueueFull: a local target's line for a generation slot is full (``generative.admit``); nothing
            is stored.
    """
    if conversation.annotator_id != getattr(annotator, "pk", None):
        raise ConversationError("No such conversation.", code="not_found")
    prompt = _clean_prompt(conversation, prompt)
    max_turns = conversation.round.task.cfg.max_turns
    deadline = time.monotonic() + wait_seconds
    while True:
        with transaction.atomic():
            locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
            if client_token is not None:
                resent = locked.turns.filter(client_token=client_token).first()
                if resent is not None and resent.slot is not None:  # a resent side-by-side first message
                    answers = locked.turns.filter(index=resent.index, slot__isnull=False).order_by("slot")
                    return CandidateStreams([TurnStream(t, None) for t in answers])
                if resent is not None:
                    return TurnStream(resent, None)
            if locked.status != Conversation.Status.OPEN:
                raise ConversationError("This conversation is over; start a new one.", code="not_open")
            if not locked.round.is_open:
                raise ConversationError(
                    "This round is closed; your message was not sent.", code="round_closed"
                )
            every = list(locked.turns.all())
            if locked.side_by_side and not every:
                first, messages = _store_first_answers(locked, annotator, prompt, client_token)
                break
            turns = thread(locked, every)
            waiting_for = [t for t in every if t.status == Turn.Status.ANSWERING]
            for turn in [t for t in waiting_for if is_lost(t)]:
                end_lost_turn(turn, answering_model(turn))
            busy = any(t.status == Turn.Status.ANSWERING for t in waiting_for)
            if not busy and locked.side_by_side and locked.chosen_turn_id is None:
                raise ConversationError(
                    "Rate each answer to your first message and choose the one to go on with before "
                    "sending another message.",
                    code="choose_first",
                )
            if not busy:
                if len(turns) >= max_turns:
                    raise ConversationError(
                        f"This conversation has its {max_turns} messages; answer the rubric or start a new one.",
                        code="max_turns",
                    )
                messages = messages_of(locked, turns, prompt)
                _check_fits(locked.model, messages)
                admit(locked.model, who=annotator.pk)  # a full line refuses before the turn is stored
                turn = Turn.objects.create(
                    conversation=locked,
                    index=len(turns),
                    prompt=prompt,
                    client_token=client_token,
                    answered_by=this_process(),
                )
                try:  # last: a budget passed refuses before the model is called, and nothing stays stored
                    budget.reserve(
                        turn=turn,
                        annotator=annotator,
                        model=locked.model,
                        messages=messages,
                        max_new_tokens=decoding_of(locked.model).max_new_tokens,
                    )
                except budget.BudgetExceeded as refusal:
                    raise ConversationError(str(refusal), code="budget") from None
                first = None
                break
        if time.monotonic() > deadline:
            raise ConversationError(
                "The model is still answering your previous message; try again in a moment.", code="busy"
            )
        time.sleep(0.1)
    if first is not None:
        return CandidateStreams([TurnStream(t, messages) for t in first])
    return TurnStream(turn, messages)


def send_message(
    *, round_: Round, annotator, conversation_id, context_id, prompt, client_token: uuid.UUID | None = None
) -> TurnStream | CandidateStreams:
    """The red-teaming page's send: ``prompt`` to the annotator's open conversation ``conversation_id``
    or, without one (None), to a new conversation on the passage ``context_id`` the page served (an id as
    sent, text or None; ignored for a task without passages). Returns ``send_turn``'s stream.

    Raises:
        ConversationError: another user's or an unknown conversation (``not_found``), a passage that is
            not open in ``round_`` (``bad_context``), and ``send_turn``'s refusals.
        QueueFull: the target's line is full; nothing is stored (not even the new conversation). Any
            refusal of a first message leaves no new conversation either.
        qualification.NotQualified: the writer may not contribute (``start_conversation``).
    """
    if conversation_id is not None:
        conversation = selectors.own_conversation(annotator, conversation_id)
        if conversation is None:
            raise ConversationError("No such conversation.", code="not_found")
    else:
        context = None
        if round_.task.cfg.context_fields:
            context = task_selectors.context_of_round(round_, context_id)
            if context is None:
                raise ConversationError(
                    "That passage is no longer open; here is another one.", code="bad_context"
                )
        admit(round_target(round_), who=annotator.pk)  # a full line refuses before the conversation is stored
        # One transaction: a first message refused (its text, the budget, the model's context) leaves no
        # empty conversation behind.
        with transaction.atomic():
            conversation = start_conversation(round_=round_, annotator=annotator, context=context)
            return send_turn(
                conversation=conversation, annotator=annotator, prompt=prompt, client_token=client_token
            )
    return send_turn(conversation=conversation, annotator=annotator, prompt=prompt, client_token=client_token)


class TurnStream(AnswerStream):
    """The pieces of a turn's answer as the target generates them (``AnswerStream``: ``for`` or
    ``async for``); ``turn`` is the stored ``Turn``, updated with the answer, its generation record and
    status when the stream ends (or is left), and its reservation settled (``budget.settle``).

    The target's stream is asked for here, in the caller's (blocking) code, so that an async reader
    touches the database only to store the end (in the request's thread)."""

    def __init__(self, turn: Turn, messages: list[dict] | None):
        self.turn = turn
        self._answer: AnswerStream | None = None
        self._failure: InferenceError | None = None
        self._text, self._written_at = "", time.monotonic()
        if messages is not None:
            self._model = answering_model(turn)
            try:
                self._answer = chat_stream(self._model, messages)
            except InferenceError as exc:
                self._failure = exc
        super().__init__()

    def drain(self) -> Turn:
        """Read the rest of the answer and return the stored ``turn`` (whatever its status: a broken
        answer is stored, not raised)."""
        for _ in self._iterator:
            pass
        return self.turn

    async def adrain(self) -> Turn:
        """``drain()`` for an async reader."""
        async for _ in self.__aiter__():
            pass
        return self.turn

    def _stored(self) -> bool:
        """True for a resent turn (nothing to generate: the stored answer is the stream)."""
        return self._answer is None and self._failure is None

    def _run(self) -> Iterator[str]:
        if self._stored():
            if self.turn.answer:
                yield self.turn.answer
            return
        try:
            if self._answer is not None:
                for piece in self._answer:
                    if self._due(piece):  # written before it is given: a reader never saw more than is kept
                        self._checkpoint()
                    yield piece
        except InferenceError as exc:
            self._failure = exc
        finally:
            if self._answer is not None:
                self._answer.close()  # the reader left early: the generation stops, what came is recorded
            self._store()

    async def _arun(self) -> AsyncIterator[str]:
        if self._stored():
            if self.turn.answer:
                yield self.turn.answer
            return
        try:
            if self._answer is not None:
                async for piece in self._answer:
                    if self._due(piece):
                        await sync_to_async(self._checkpoint)(release=True)
                    yield piece
        except InferenceError as exc:
            self._failure = exc
        finally:
            if self._answer is not None:
                await self._answer.aclose()
            await sync_to_async(self._store)()

    def _due(self, piece: str) -> bool:
        """Add ``piece`` to the text so far; True when ``CHECKPOINT_SECONDS`` have passed since it was
        last written."""
        self._text += piece
        return time.monotonic() - self._written_at >= CHECKPOINT_SECONDS

    def _checkpoint(self, release: bool = False) -> None:
        """Write the text so far to the turn while it is still answering (its process may die before the
        end: ``end_lost_turn`` keeps this). ``release``: give the database connection back afterwards
        (an ASGI stream holds none between pieces, ``core.streaming.without_database``)."""
        self._written_at = time.monotonic()
        Turn.objects.filter(pk=self.turn.pk, status=Turn.Status.ANSWERING).update(
            answer=self._text, updated_at=timezone.now()
        )
        if release:
            connections.close_all()

    def end_unread(self, reason: str) -> None:
        """End an answer whose reader left before it began (a later side-by-side answer): stored
        ``failed`` with ``reason``, its model never called and its reservation released
        (``budget.release``). Nothing for a stored or already ended answer."""
        if self._stored() or self.turn.status != Turn.Status.ANSWERING:
            return
        if self._answer is not None:
            self._answer.close()
        self._failure = self._failure or InferenceError(reason)
        budget.release(self.turn)  # before storing: the store's settling then finds nothing to charge
        self._store()

    def _store(self) -> None:
        """Store the answer as it ended (text, generation record, status, error) and settle the turn's
        reservation with what it cost."""
        turn, model, answer = self.turn, self._model, self._answer
        generation = answer.generation if answer is not None else None
        if self._failure is not None:
            turn.status, turn.error = Turn.Status.FAILED, str(self._failure)[:5000]
        if generation is not None:
            if generation.cost is None:  # a local answer: priced here, as replays price theirs
                generation.cost = answer_cost(model, generation)
            turn.answer, turn.generation = generation.text, generation.as_dict()
            if turn.status != Turn.Status.FAILED:
                empty_failure = generation.finish_reason == "error" and not generation.text
                turn.status = Turn.Status.FAILED if empty_failure else Turn.Status.ANSWERED
                turn.error = generation.error
        elif turn.status == Turn.Status.ANSWERING:
            turn.status = Turn.Status.FAILED
        turn.save(update_fields=["answer", "generation", "status", "error", "updated_at"])
        budget.settle(turn, model)


#: Why a side-by-side answer was not generated: its reader left before it began.
UNREAD = "not generated: the reader left before this answer began"


class CandidateStreams:
    """The answers of a side-by-side first message (``send_turn``), generated together
    (``serving.Together``: a local model's answers decode in one batch, a remote server answers them at
    once): ``pieces()`` (blocking) or ``apieces()`` (an event loop) yields ``(slot, piece)``, one piece of
    each unfinished answer in slot order, round after round; ``turns`` are the stored turns (slot
    order), each updated as its answer ends. A reader who leaves stops every answer still being
    generated (each stored with what came, ``cut_short``); one never begun (the reader left during the
    first answer's first piece) is never asked (stored ``failed`` with ``UNREAD``, charged nothing)."""

    def __init__(self, streams: list[TurnStream]):
        self.streams = streams

    @property
    def turns(self) -> list[Turn]:
        return [s.turn for s in self.streams]

    @property
    def turn(self) -> Turn:
        """The first answer's turn (slot 0), where a page links to the conversation."""
        return self.streams[0].turn

    def pieces(self) -> Iterator[tuple[int, str]]:
        """``(slot, piece)`` of every answer, one piece of each unfinished answer in turn (a
        ``Waiting`` piece too, as ``TurnStream``)."""
        together = Together(self.streams)
        try:
            yield from together
        finally:
            for slot in together.unfinished:  # the reader left
                if slot in together.begun:
                    self.streams[slot].close()
                else:
                    self.streams[slot].end_unread(UNREAD)

    async def apieces(self) -> AsyncIterator[tuple[int, str]]:
        """``pieces()`` for an async reader."""
        together = Together(self.streams)
        try:
            async for slot_piece in together:
                yield slot_piece
        finally:
            for slot in together.unfinished:
                if slot in together.begun:
                    await self.streams[slot].aclose()
                else:
                    await sync_to_async(self.streams[slot].end_unread)(UNREAD)

    def drain(self) -> list[Turn]:
        """Generate every answer; the stored turns, in slot order."""
        for _ in self.pieces():
            pass
        return self.turns

    async def adrain(self) -> list[Turn]:
        """``drain()`` for an async reader."""
        async for _ in self.apieces():
            pass
        return self.turns


def clean_judgement(cfg, rubric_answers, categories) -> tuple[dict, list[str], bool]:
    """``(answers, categories, failed)``: the rubric's answers cleaned (``Rubric.clean``), the categories
    without repeats, and whether the answers judge a failure (``Rubric.failed``).

    Raises:
        ConversationError: ``invalid``, the problem named (a bad answer, an unknown category, a failure
            without a category or a good answer with one).
    """
    rubric = cfg.rubric
    try:
        answers = rubric.clean(rubric_answers)
    except ValidationError as exc:
        raise ConversationError(" ".join(exc.messages), code="invalid") from None
    failed = rubric.failed(answers)
    known = [c["name"] for c in cfg.failure_categories]
    categories = list(dict.fromkeys(categories or ()))
    unknown = [c for c in categories if c not in known]
    if unknown or not all(isinstance(c, str) for c in categories):
        raise ConversationError(f"Choose categories among: {', '.join(known)}.", code="invalid")
    if failed and not categories:
        raise ConversationError("Tag the failure with at least one category.", code="invalid")
    if not failed and categories:
        raise ConversationError("An answer you judged good takes no failure category.", code="invalid")
    return answers, categories, failed


def judged_as(example: Example, rubric) -> str:
    """The stored judgement of a conversation's example, said in a few words, its answers in the order
    of ``rubric``'s questions: "example 12: a failure of the model (supported: no, helpful: 2;
    categories: fabrication)"."""
    verdict = "a failure of the model" if example.model_wrong else "a good answer"
    target = example.target or {}
    answers = ", ".join(f"{q.name}: {target[q.name]}" for q in rubric.questions if q.name in target)
    tags = f"; categories: {', '.join(example.tags)}" if example.tags else ""
    return f"example {example.pk}: {verdict} ({answers}{tags})"


def submit_conversation(
    *, conversation: Conversation, annotator, rubric_answers, categories=(), answered_turns: int | None = None
) -> Example:
    """The author's judgement of the answers they got: the task's rubric answered, and the failure
    categories tagged; the conversation becomes an example of its round.

    The rubric decides ``model_wrong`` (``tasks.rubric.Rubric.failed``: any failure answer). A failure
    needs at least one of the task's categories; an answer judged good takes none. The example stores
    the conversation in the chat ``messages`` format (``inputs["messages"]``, the context as the
    example's context), the rubric answers as its target, the categories as its tags, and in
    ``metadata`` each answer's generation record, the total cost and the questions that failed.

    A conversation is judged once. Sent again with the same answers and categories (a double click), the
    example stored first is returned; with others (a second tab, a changed mind), it is refused
    (``already_judged``, naming the stored judgement), never silently dropped.

    ``answered_turns``: how many answered turns the judge was shown (the page's judge form sends it; the
    API may). When the conversation has another number of answered turns (a stale tab: another tab sent
    a message meanwhile), the judgement is refused (``stale_judgement``), since it would cover answers
    its judge never read. None: not checked.

    Raises:
        ConversationError: another user's conversation (``not_found``), one abandoned (``not_open``),
            one already judged with other answers or categories (``already_judged``), with no answered
            turn or an answer still coming (``not_ready``), answered turns other than the judge saw
            (``stale_judgement``), bad rubric answers or categories (``invalid``, each problem named),
            a round closed meanwhile (``round_closed``), or no passage where the task needs one
            (``bad_context``: a conversation stored before that was refused at its start). Nothing is
            stored on any of these.
    """
    if conversation.annotator_id != getattr(annotator, "pk", None):
        raise ConversationError("No such conversation.", code="not_found")
    cfg = conversation.round.task.cfg
    rubric = cfg.rubric
    try:
        answers, categories, failed = clean_judgement(cfg, rubric_answers, categories)
        problem = None
    except ConversationError as exc:  # said after the check below: a judged conversation says so first
        problem = exc
    with transaction.atomic():
        locked = (
            Conversation.objects.select_for_update().select_related("round__task").get(pk=conversation.pk)
        )
        if locked.status == Conversation.Status.SUBMITTED and locked.example_id:
            stored = locked.example
            if problem is None and stored.target == answers and sorted(stored.tags) == sorted(categories):
                return stored  # the same judgement sent again: stored once
            raise ConversationError(
                f"This conversation was already judged ({judged_as(stored, rubric)}). Your new answers were not "
                "stored.",
                code="already_judged",
            )
        if problem is not None:
            raise problem
        if locked.status != Conversation.Status.OPEN:
            raise ConversationError("This conversation is over; start a new one.", code="not_open")
        if not locked.round.is_open:
            raise ConversationError("This round is closed; nothing was stored.", code="round_closed")
        # One opened before start_conversation refused a missing passage never becomes an example.
        check_context(locked.round, locked.context, what="A conversation")
        turns = list(locked.turns.all())
        for turn in turns:
            if is_lost(turn):
                end_lost_turn(turn, answering_model(turn))
        if any(t.status == Turn.Status.ANSWERING for t in turns):
            raise ConversationError("Wait for the model's answer before judging it.", code="not_ready")
        side_answers = [t for t in turns if t.slot is not None]
        if side_answers and locked.chosen_turn_id is None:
            raise ConversationError(
                "Rate each answer to your first message and choose one before judging the conversation.",
                code="choose_first",
            )
        turns = thread(locked, turns)
        answered = [t for t in turns if t.status == Turn.Status.ANSWERED]
        if not answered:
            raise ConversationError("The model has not answered yet; send a message first.", code="not_ready")
        if answered_turns is not None and answered_turns != len(answered):
            raise ConversationError(
                f"The conversation has {len(answered)} answered message(s), but the page you judged from "
                f"showed {answered_turns}: another tab went on with it. Read the answers as they are now "
                "(reload the page), then judge them; nothing was stored.",
                code="stale_judgement",
            )
        messages = [m for m in messages_of(locked, answered) if m["role"] != "system"]
        others = [
            t for t in side_answers if t.pk != locked.chosen_turn_id and t.status == Turn.Status.ANSWERED
        ]
        costs = [t.generation.get("cost") for t in [*answered, *others]]
        example = Example.objects.create(
            round=locked.round,
            context=locked.context,
            annotator=annotator,
            inputs={"messages": messages},
            target=answers,
            model_wrong=failed,
            tags=categories,
            metadata={
                "mode": "conversation",
                "conversation": locked.pk,
                "model": locked.model.name,
                "turns": len(answered),
                "generations": [t.generation for t in answered],
                "cost": None if None in costs else sum(costs),
                "failed_questions": rubric.failed_questions(answers),
                **({"side_by_side": side_by_side_record(side_answers)} if side_answers else {}),
            },
        )
        locked.status, locked.example = Conversation.Status.SUBMITTED, example
        locked.save(update_fields=["status", "example", "updated_at"])
        # As for any example (crowd studies count and pay it); not sent for the double submit above.
        signals.example_created.send(sender=Example, example=example)
    return example


def side_by_side_record(answers: list[Turn]) -> list[dict]:
    """The side-by-side answers of a conversation as its example keeps them (``metadata["side_by_side"]``,
    slot order): ``[{"slot": "A", "model", "answer", "status", "generation", "score", "rubric",
    "failed", "categories", "chosen"}]``; an answer that failed has no rating (``score`` None)."""
    ratings = {r.turn_id: r for r in CandidateRating.objects.filter(turn__in=answers)}
    record = []
    for turn in sorted(answers, key=lambda t: t.slot):
        rating = ratings.get(turn.pk)
        record.append(
            {
                "slot": turn.slot_letter,
                "model": answering_model(turn).name,
                "answer": turn.answer,
                "status": turn.status,
                "generation": turn.generation,
                "score": rating.score if rating else None,
                "rubric": rating.answers if rating else {},
                "failed": rating.failed if rating else None,
                "categories": rating.tags if rating else [],
                "chosen": bool(rating and rating.chosen),
            }
        )
    return record
