"""A red-teaming answer whose process dies mid-answer (a killed worker): its text so far is written every
``CHECKPOINT_SECONDS`` while it streams, and the next request on the conversation finds the process gone
(``core.processes``), keeps that text with its reason, charges the reservation once, and goes on."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal

import pytest

from annotation.models import BudgetCharge, RoundBudget, Turn
from annotation.red_team import conversations
from annotation.red_team.conversations import (
    LOST,
    messages_of,
    send_turn,
    start_conversation,
    submit_conversation,
)
from tasks.models import Context
from tests.factories.red_team import make_red_team_round


@pytest.fixture
def red_round(db, smollm2_dir):
    return make_red_team_round(smollm2_dir, generation={"max_new_tokens": 12, "temperature": 0.0,
                                                        "price_input_per_million": 2.0, "price_output_per_million": 10.0})  # fmt: skip


@pytest.fixture
def conversation(red_round, annotator):
    RoundBudget.objects.create(round=red_round, cap=Decimal("1"))
    passage = Context.objects.create(
        task=red_round.task, round=red_round, data={"title": "T", "passage": "A river."}
    )
    return start_conversation(round_=red_round, annotator=annotator, context=passage)


def _dead_process() -> str:
    """The marker of a process of this machine that has ended."""
    child = subprocess.run(
        [sys.executable, "-c", "from core.processes import this_process; print(this_process())"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return child.stdout.strip()


def test_a_streaming_answer_writes_its_text_so_far_while_it_answers(conversation, annotator, monkeypatch):
    monkeypatch.setattr(conversations, "CHECKPOINT_SECONDS", 0.0)
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Name a river.")
    assert stream.turn.answered_by == conversations.this_process()
    pieces = [next(stream), next(stream)]
    stored = Turn.objects.get(pk=stream.turn.pk)
    assert (stored.status, stored.answer) == ("answering", "".join(pieces))
    rest = "".join(stream)
    assert Turn.objects.get(pk=stream.turn.pk).answer == "".join(pieces) + rest


def test_a_turn_whose_process_died_keeps_its_last_text_and_the_conversation_goes_on(conversation, annotator):
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Name a river.")
    reserved = BudgetCharge.objects.get(turn=stream.turn).reserved
    # As a worker killed after its last checkpoint leaves it: answering, "Half an" written, process gone.
    Turn.objects.filter(pk=stream.turn.pk).update(answered_by=_dead_process(), answer="Half an")
    following = send_turn(conversation=conversation, annotator=annotator, prompt="Go on.", wait_seconds=0)
    lost = Turn.objects.get(pk=stream.turn.pk)
    assert (lost.status, lost.answer, lost.error) == ("answered", "Half an", LOST)
    assert lost.generation == {"text": "Half an", "finish_reason": "error", "model": "smollm2", "error": LOST}
    # Its tokens were never counted: the reservation is charged, once.
    assert BudgetCharge.objects.get(turn=lost).spent == reserved
    # The next answer reads the kept text as the model's earlier answer.
    assert following._answer is not None
    assert messages_of(conversation, [lost], "Go on.")[-2:] == [
        {"role": "assistant", "content": "Half an"},
        {"role": "user", "content": "Go on."},
    ]
    assert "".join(following) and Turn.objects.get(pk=following.turn.pk).status == "answered"
    # Settling again (the dead process's own end, had it come) changes nothing.
    conversations.budget.settle(lost, lost.conversation.model)
    assert BudgetCharge.objects.get(turn=lost).spent == reserved


def test_a_lost_turn_without_text_fails_and_the_conversation_can_be_judged(conversation, annotator):
    "".join(send_turn(conversation=conversation, annotator=annotator, prompt="Name a river."))
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Another?")
    Turn.objects.filter(pk=stream.turn.pk).update(answered_by=_dead_process())
    example = submit_conversation(
        conversation=conversation, annotator=annotator, rubric_answers={"supported": "yes", "helpful": "4"}
    )
    lost = Turn.objects.get(pk=stream.turn.pk)
    assert (lost.status, lost.error) == ("failed", LOST)
    assert example.metadata["turns"] == 1  # the answered turn only


def test_a_turn_of_a_live_process_still_makes_the_next_one_wait(conversation, annotator):
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Name a river.")
    with pytest.raises(conversations.ConversationError) as busy:
        send_turn(conversation=conversation, annotator=annotator, prompt="Go on.", wait_seconds=0)
    assert busy.value.code == "busy"
    "".join(stream)
