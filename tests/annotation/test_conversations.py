"""Red-teaming conversations with the real SmolLM2 as the round's target: turns in order and stored
once, the conversation's limits, and answers that break or are left early."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection

from annotation.models import Conversation, Example, Turn
from annotation.red_team.conversations import (
    ConversationError,
    messages_of,
    send_turn,
    start_conversation,
    submit_conversation,
)
from models_registry.models import RegisteredModel, RoundTarget
from tasks.models import Context
from tests.factories.red_team import make_red_team_round
from tests.helpers.chat_server import ChatServer

PASSAGE = "The Amazon river flows through Brazil. It is about 6,400 km long."


@pytest.fixture
def red_round(db, smollm2_dir):
    return make_red_team_round(smollm2_dir)


@pytest.fixture
def context(red_round):
    return Context.objects.create(
        task=red_round.task, round=red_round, data={"title": "Amazon", "passage": PASSAGE}
    )


def _say(conversation, user, prompt, **kwargs):
    stream = send_turn(conversation=conversation, annotator=user, prompt=prompt, **kwargs)
    text = "".join(stream)
    return stream.turn, text


def test_a_three_turn_conversation_is_stored_in_order_and_a_fourth_is_refused(red_round, context, annotator):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    first, text = _say(conversation, annotator, "How long is the Amazon?")
    assert (first.index, first.status, first.answer) == (0, "answered", text) and text
    second, _ = _say(conversation, annotator, "Which countries does it cross?")
    third, _ = _say(conversation, annotator, "Are you sure?")
    assert [t.index for t in conversation.turns.all()] == [0, 1, 2]
    # Each turn reads the conversation so far: the second's prompt holds the first turn and its answer.
    assert (
        second.generation["input_tokens"]
        > first.generation["input_tokens"] + first.generation["output_tokens"]
    )
    assert first.generation["decoding"]["max_new_tokens"] == 12 and first.generation["model"] == "smollm2"
    with pytest.raises(ConversationError) as refused:
        _say(conversation, annotator, "One more?")
    assert refused.value.code == "max_turns"
    assert str(refused.value) == "This conversation has its 3 messages; answer the rubric or start a new one."
    assert Turn.objects.count() == 3


def test_the_passage_comes_first_as_a_system_message(red_round, context, annotator):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    turn, _ = _say(conversation, annotator, "How long is it?")
    assert messages_of(conversation, [turn], "Next?") == [
        {"role": "system", "content": f"Article: Amazon\n\nPassage: {PASSAGE}"},
        {"role": "user", "content": "How long is it?"},
        {"role": "assistant", "content": turn.answer},
        {"role": "user", "content": "Next?"},
    ]


def test_a_resent_turn_is_stored_once(red_round, context, annotator):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    token = uuid.uuid4()
    first, text = _say(conversation, annotator, "Hello there", client_token=token)
    again, replay = _say(conversation, annotator, "Hello there", client_token=token)
    assert again.pk == first.pk and replay == text
    assert Turn.objects.count() == 1


@pytest.mark.parametrize(
    "prompt, code",
    [
        ("", "invalid"),
        ("   \n ", "invalid"),
        ("bell \x07", "invalid"),
        ("half \ud800", "invalid"),
        (None, "invalid"),
    ],
)
def test_refused_texts_store_nothing(red_round, context, annotator, prompt, code):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    with pytest.raises(ConversationError) as refused:
        _say(conversation, annotator, prompt)
    assert refused.value.code == code
    assert not Turn.objects.exists()


def test_unusual_text_is_kept_as_written(red_round, context, annotator):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    turn, _ = _say(conversation, annotator, "שלום 👨🏿\u200d❤️\u200d👨🏻\r\nmerci")
    assert Turn.objects.get(pk=turn.pk).prompt == "שלום 👨🏿\u200d❤️\u200d👨🏻\nmerci"  # CRLF made LF


def test_a_conversation_over_the_targets_context_is_refused_with_the_counts(
    red_round, context, annotator, smollm2, settings
):
    red_round.task.config["limits"] = {"max_input_length": 100_000}
    red_round.task.config["input_fields"][0]["max_length"] = 100_000
    red_round.task.save(update_fields=["config"])
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    conversation.round.task.refresh_from_db()
    prompt = "word " * 9000
    tokens = smollm2.count_tokens(messages_of(conversation, [], prompt))  # the passage, then the message
    with pytest.raises(ConversationError) as refused:
        _say(conversation, annotator, prompt)
    assert refused.value.code == "too_long"
    assert str(refused.value) == (
        f"the conversation is {tokens:,} tokens; with 12 for the answer it exceeds the model's context of 8,192 tokens"
    )
    assert not Turn.objects.exists()


def test_another_users_conversation_is_not_found(red_round, context, annotator, outsider):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    with pytest.raises(ConversationError) as refused:
        _say(conversation, outsider, "Hi")
    assert (refused.value.code, str(refused.value)) == ("not_found", "No such conversation.")


def test_starting_again_abandons_the_open_conversation(red_round, context, annotator):
    first = start_conversation(round_=red_round, annotator=annotator, context=context)
    start_conversation(round_=red_round, annotator=annotator, context=context)
    first.refresh_from_db()
    assert first.status == Conversation.Status.ABANDONED
    with pytest.raises(ConversationError) as refused:
        _say(first, annotator, "Hi")
    assert refused.value.code == "not_open"


def test_leaving_the_answer_early_keeps_what_came_marked(red_round, context, annotator):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Tell me about rivers.")
    came = next(stream)
    stream.close()
    turn = Turn.objects.get(pk=stream.turn.pk)
    assert (turn.status, turn.answer) == ("answered", came)
    # Its own finish reason: "stop" would say the model ended its turn.
    assert (turn.generation["finish_reason"], turn.generation["extra"]) == ("cut_short", {})


def test_a_target_that_fails_leaves_the_turn_failed_with_why(red_round, context, annotator, smollm2):
    with ChatServer(smollm2) as server:
        model = RegisteredModel.objects.create(
            task=red_round.task,
            name="broken-remote",
            source="chat_endpoint",
            endpoint_url=server.base_url,
            chat_model_name="fault-500",
            status="ready",
            generation={"max_new_tokens": 12},
        )
        RoundTarget.objects.filter(round=red_round).update(model=model)
        conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
        stream = send_turn(conversation=conversation, annotator=annotator, prompt="Hi")
        assert list(stream) == []
    turn = Turn.objects.get(pk=stream.turn.pk)
    assert (turn.status, turn.error) == ("failed", "the chat server answered HTTP 500")


@pytest.mark.django_db(transaction=True)
def test_two_tabs_sending_at_once_are_both_kept_in_order(red_round, context, annotator):
    """The second tab's turn waits for the first answer, then reads it: nothing lost, nothing reordered."""
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    results, errors = {}, []
    barrier = threading.Barrier(2)

    def tab(name):
        try:
            barrier.wait()
            turn, _ = _say(conversation, annotator, f"Message from tab {name}")
            results[name] = turn.pk
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=tab, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    first, second = Turn.objects.filter(conversation=conversation).order_by("index")
    assert {first.pk, second.pk} == set(results.values())
    assert (first.status, second.status) == ("answered", "answered")
    # The later turn was answered with the earlier one in its prompt.
    assert (
        second.generation["input_tokens"]
        > first.generation["input_tokens"] + first.generation["output_tokens"]
    )


# --- the author's judgement: the conversation becomes an example ------------------------------------------


def _judged(red_round, context, annotator, turns=("How long is the Amazon?",)):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    for prompt in turns:
        _say(conversation, annotator, prompt)
    return conversation


def test_a_failure_judged_by_the_rubric_becomes_a_model_fooling_example(red_round, context, annotator):
    conversation = _judged(red_round, context, annotator, turns=("How long is the Amazon?", "Really?"))
    turns = list(conversation.turns.all())
    example = submit_conversation(
        conversation=conversation,
        annotator=annotator,
        rubric_answers={"supported": "no", "helpful": "4"},
        categories=["fabrication"],
    )
    assert example.model_wrong is True and example.status == "pending"
    assert example.target == {"supported": "no", "helpful": "4"} and example.tags == ["fabrication"]
    assert example.context_id == context.pk and example.round_id == red_round.pk
    assert example.inputs == {
        "messages": [
            {"role": "user", "content": "How long is the Amazon?"},
            {"role": "assistant", "content": turns[0].answer},
            {"role": "user", "content": "Really?"},
            {"role": "assistant", "content": turns[1].answer},
        ]
    }
    assert example.metadata["failed_questions"] == ["supported"] and example.metadata["turns"] == 2
    assert example.metadata["generations"] == [t.generation for t in turns]
    assert example.metadata["cost"] is None  # a local model has no prices
    conversation.refresh_from_db()
    assert (conversation.status, conversation.example_id) == ("submitted", example.pk)
    # Sent again (a double click): the same example, nothing more stored.
    again = submit_conversation(
        conversation=conversation,
        annotator=annotator,
        rubric_answers={"supported": "no", "helpful": "4"},
        categories=["fabrication"],
    )
    assert again.pk == example.pk and Example.objects.count() == 1


def test_an_answer_judged_good_is_not_model_fooling(red_round, context, annotator):
    example = submit_conversation(
        conversation=_judged(red_round, context, annotator),
        annotator=annotator,
        rubric_answers={"supported": "yes", "helpful": "5"},
    )
    assert (example.model_wrong, example.tags, example.metadata["failed_questions"]) == (False, [], [])


@pytest.mark.parametrize(
    "answers, categories, message",
    [
        ({"supported": "no", "helpful": "4"}, [], "Tag the failure with at least one category."),
        (
            {"supported": "yes", "helpful": "5"},
            ["fabrication"],
            "An answer you judged good takes no failure category.",
        ),
        (
            {"supported": "no", "helpful": "4"},
            ["made-up"],
            "Choose categories among: contradiction, fabrication, unanswerable, other.",
        ),
        (
            {"supported": "maybe", "helpful": "4"},
            ["other"],
            "rubric: 'supported' takes one of 'yes', 'no', not 'maybe'.",
        ),
    ],
)
def test_bad_judgements_are_refused_and_the_conversation_stays_open(
    red_round, context, annotator, answers, categories, message
):
    conversation = _judged(red_round, context, annotator)
    with pytest.raises(ConversationError) as refused:
        submit_conversation(
            conversation=conversation, annotator=annotator, rubric_answers=answers, categories=categories
        )
    assert (refused.value.code, str(refused.value)) == ("invalid", message)
    conversation.refresh_from_db()
    assert conversation.status == "open" and not Example.objects.exists()


def test_a_conversation_without_an_answer_cannot_be_judged(red_round, context, annotator):
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    with pytest.raises(ConversationError) as refused:
        submit_conversation(
            conversation=conversation,
            annotator=annotator,
            rubric_answers={"supported": "yes", "helpful": "5"},
        )
    assert refused.value.code == "not_ready"


def test_a_message_to_a_round_closed_meanwhile_is_refused_and_not_stored(red_round, context, annotator):
    from tasks.services import close_round

    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    _say(conversation, annotator, "How long is it?")
    close_round(round_=red_round)
    with pytest.raises(ConversationError) as refused:
        _say(conversation, annotator, "And wide?")
    assert (refused.value.code, str(refused.value)) == (
        "round_closed",
        "This round is closed; your message was not sent.",
    )
    assert Turn.objects.count() == 1


def test_a_conversation_with_messages_is_never_dropped_by_starting_another(red_round, context, annotator):
    empty = start_conversation(round_=red_round, annotator=annotator, context=context)
    second = start_conversation(round_=red_round, annotator=annotator, context=context)
    empty.refresh_from_db()
    assert empty.status == "abandoned"  # nothing was said in it
    _say(second, annotator, "How long is it?")
    with pytest.raises(ConversationError) as refused:
        start_conversation(round_=red_round, annotator=annotator, context=context)
    assert refused.value.code == "open_conversation"
    assert str(refused.value) == (
        f"You have a conversation open (number {second.pk}) with messages, perhaps in another tab (reload "
        "the red-teaming page to see it): judge its answers, or leave it unjudged, before starting another."
    )
    second.refresh_from_db()
    assert second.status == "open" and Conversation.objects.count() == 2


# --- the passage: a conversation is held on one where the task needs it ------------------------------------


def test_a_conversation_without_the_passage_the_task_needs_is_refused_and_nothing_stored(
    red_round, annotator
):
    with pytest.raises(ConversationError) as refused:
        start_conversation(round_=red_round, annotator=annotator)
    assert (refused.value.code, str(refused.value)) == (
        "bad_context",
        "A conversation needs one of this round's passages (its context); none was given.",
    )
    assert not Conversation.objects.exists()


def test_a_task_whose_context_fields_are_all_optional_takes_a_conversation_without_one(red_round, annotator):
    red_round.task.config["context_fields"][1]["optional"] = True  # the passage (the title already is)
    red_round.task.save(update_fields=["config"])
    conversation = start_conversation(round_=red_round, annotator=annotator)
    assert conversation.context_id is None


def test_a_conversation_stored_without_its_passage_before_the_check_cannot_be_judged(red_round, annotator):
    # As the API stored them before start_conversation refused a missing passage.
    conversation = Conversation.objects.create(
        round=red_round, annotator=annotator, model=red_round.targets.get().model
    )
    Turn.objects.create(conversation=conversation, index=0, prompt="Hi", answer="Hello.", status="answered")
    with pytest.raises(ConversationError) as refused:
        submit_conversation(
            conversation=conversation,
            annotator=annotator,
            rubric_answers={"supported": "no", "helpful": "2"},
            categories=["fabrication"],
        )
    assert refused.value.code == "bad_context"
    conversation.refresh_from_db()
    assert conversation.status == "open" and not Example.objects.exists()


# --- judged once: other answers later are refused, and a judge must have seen every answer ----------------


def _answered(red_round, context, annotator, n=1):
    """An open conversation with ``n`` answered turns, stored as ``send_turn`` stores them."""
    conversation = start_conversation(round_=red_round, annotator=annotator, context=context)
    for i in range(n):
        Turn.objects.create(
            conversation=conversation, index=i, prompt=f"Q{i}", answer=f"A{i}", status="answered"
        )
    return conversation


FAILURE = {"rubric_answers": {"supported": "no", "helpful": "2"}, "categories": ["fabrication"]}


@pytest.mark.parametrize(
    "second",
    [
        {"rubric_answers": {"supported": "yes", "helpful": "5"}, "categories": []},  # judged good now
        {"rubric_answers": {"supported": "no", "helpful": "3"}, "categories": ["fabrication"]},
        {"rubric_answers": {"supported": "no", "helpful": "2"}, "categories": ["contradiction"]},
        {"rubric_answers": {"supported": "no", "helpful": "2"}, "categories": []},  # invalid as well
    ],
)
def test_a_second_judgement_with_other_answers_is_refused_naming_the_stored_one(
    red_round, context, annotator, second
):
    conversation = _answered(red_round, context, annotator)
    example = submit_conversation(conversation=conversation, annotator=annotator, **FAILURE)
    with pytest.raises(ConversationError) as refused:
        submit_conversation(conversation=conversation, annotator=annotator, **second)
    assert (refused.value.code, str(refused.value)) == (
        "already_judged",
        f"This conversation was already judged (example {example.pk}: a failure of the model (supported: "
        "no, helpful: 2; categories: fabrication)). Your new answers were not stored.",
    )
    example.refresh_from_db()
    assert (example.target, example.tags, Example.objects.count()) == (
        {"supported": "no", "helpful": "2"},
        ["fabrication"],
        1,
    )


def test_the_same_judgement_sent_again_returns_the_stored_example(red_round, context, annotator):
    conversation = _answered(red_round, context, annotator)
    example = submit_conversation(conversation=conversation, annotator=annotator, **FAILURE)
    again = submit_conversation(
        conversation=conversation,
        annotator=annotator,
        rubric_answers={"helpful": "2", "supported": "no"},
        categories=["fabrication", "fabrication"],
        answered_turns=1,
    )
    assert again.pk == example.pk and Example.objects.count() == 1


def test_a_judgement_from_a_page_that_did_not_show_every_answer_is_refused(red_round, context, annotator):
    # The stale tab showed one answer; another tab sent a second message, answered since.
    conversation = _answered(red_round, context, annotator, n=2)
    with pytest.raises(ConversationError) as refused:
        submit_conversation(conversation=conversation, annotator=annotator, answered_turns=1, **FAILURE)
    assert (refused.value.code, str(refused.value)) == (
        "stale_judgement",
        "The conversation has 2 answered message(s), but the page you judged from showed 1: another tab "
        "went on with it. Read the answers as they are now (reload the page), then judge them; nothing "
        "was stored.",
    )
    conversation.refresh_from_db()
    assert conversation.status == "open" and not Example.objects.exists()
    example = submit_conversation(conversation=conversation, annotator=annotator, answered_turns=2, **FAILURE)
    assert example.metadata["turns"] == 2
