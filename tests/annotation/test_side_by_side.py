"""Several models in one conversation (annotation/red_team/side_by_side.py): the first message answered by
k of the round's targets drawn at random, rated 1-100 with the rubric, the chosen one going on; refusals
store nothing."""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import pytest

from annotation.models import CandidateRating, Conversation, Example, Turn
from annotation.red_team.conversations import (
    UNREAD,
    CandidateStreams,
    ConversationError,
    messages_of,
    send_turn,
    start_conversation,
    submit_conversation,
    thread,
)
from annotation.red_team.side_by_side import rate_answers
from tests.factories.red_team import make_passage, make_side_by_side_round
from tests.helpers.chat_server import ChatServer

GOOD = {"supported": "yes", "helpful": "4"}
BAD = {"supported": "no", "helpful": "2"}


@pytest.fixture
def server():
    with ChatServer(None) as running:
        running.reply = lambda body: f"{body['model']} says: {body['messages'][-1]['content'][:20]}"
        yield running


@pytest.fixture
def sbs_round(db, server):
    return make_side_by_side_round(server.base_url)


@pytest.fixture
def conversation(sbs_round, annotator):
    return start_conversation(round_=sbs_round, annotator=annotator, context=make_passage(sbs_round))


def _first(conversation, user, prompt="How long is the Amazon?", **kwargs) -> list[Turn]:
    stream = send_turn(conversation=conversation, annotator=user, prompt=prompt, **kwargs)
    assert isinstance(stream, CandidateStreams)
    pieces = list(stream.pieces())
    # Together: one piece of each answer in turn, so each answer's first piece comes before any second.
    slots = [slot for slot, _ in pieces]
    assert slots[: len(set(slots))] == sorted(set(slots))
    return stream.turns


def _ratings(turns, scores, judged=None):
    judged = judged or {}
    return {
        t.slot_letter: {
            "score": score,
            "rubric": judged.get(t.slot_letter, GOOD),
            "categories": ["fabrication"] if judged.get(t.slot_letter) == BAD else [],
        }
        for t, score in zip(turns, scores, strict=True)
    }


def test_k_models_answer_the_first_message_and_the_chosen_one_goes_on(conversation, annotator, server):
    turns = _first(conversation, annotator)
    assert [(t.index, t.slot, t.status) for t in turns] == [(0, 0, "answered"), (0, 1, "answered")]
    names = [t.model.name for t in turns]
    assert len(set(names)) == 2 and set(names) <= {"alpha", "beta", "gamma"}
    assert [t.answer for t in turns] == [f"{n} says: How long is the Amaz" for n in names]
    # Before the choice, a second message is refused and nothing is stored.
    with pytest.raises(ConversationError) as refused:
        send_turn(conversation=conversation, annotator=annotator, prompt="Next?")
    assert refused.value.code == "choose_first"
    rated = rate_answers(
        conversation=conversation,
        annotator=annotator,
        ratings=_ratings(turns, [35, 80], {"A": BAD}),
        chosen="B",
    )
    assert rated.model.name == names[1] and rated.chosen_turn_id == turns[1].pk
    stored = {
        r.turn.slot_letter: (r.score, r.failed, r.tags, r.chosen) for r in CandidateRating.objects.all()
    }
    assert stored == {"A": (35, True, ["fabrication"], False), "B": (80, False, [], True)}
    # The second message goes to the chosen model and reads the chosen answer only.
    second = send_turn(conversation=rated, annotator=annotator, prompt="Are you sure?")
    second.drain()
    assert (second.turn.index, second.turn.slot, second.turn.generation["model"]) == (1, None, names[1])
    sent = server.requests[-1]
    assert sent["model"] == names[1]
    assert [m["content"] for m in sent["messages"] if m["role"] == "assistant"] == [turns[1].answer]
    example = submit_conversation(conversation=rated, annotator=annotator, rubric_answers=GOOD)
    assert example.metadata["model"] == names[1] and example.metadata["turns"] == 2
    assert [m["content"] for m in example.inputs["messages"]] == [
        "How long is the Amazon?",
        turns[1].answer,
        "Are you sure?",
        second.turn.answer,
    ]
    record = example.metadata["side_by_side"]
    assert [(r["slot"], r["model"], r["score"], r["failed"], r["chosen"]) for r in record] == [
        ("A", names[0], 35, True, False),
        ("B", names[1], 80, False, True),
    ]


def test_the_draw_covers_every_pair_and_both_orders(sbs_round, annotator, server):
    seen = Counter()
    for _ in range(60):
        conversation = start_conversation(
            round_=sbs_round, annotator=annotator, context=make_passage(sbs_round)
        )
        turns = _first(conversation, annotator, "Hi")
        seen[tuple(t.model.name for t in turns)] += 1
        Conversation.objects.filter(pk=conversation.pk).update(status="abandoned")
    # 3 models, 2 drawn in order: 6 ordered pairs, each 1/6; in 60 draws each is seen (P(miss) < 1e-4).
    assert set(seen) == {
        (a, b) for a in ("alpha", "beta", "gamma") for b in ("alpha", "beta", "gamma") if a != b
    }


def test_a_resent_first_message_is_stored_once(conversation, annotator):
    token = uuid.uuid4()
    turns = _first(conversation, annotator, client_token=token)
    again = send_turn(
        conversation=conversation, annotator=annotator, prompt="How long is the Amazon?", client_token=token
    )
    assert isinstance(again, CandidateStreams)
    assert [t.pk for t in again.drain()] == [t.pk for t in turns]
    assert Turn.objects.count() == 2


def test_ratings_are_stored_once_and_other_ratings_refused(conversation, annotator):
    turns = _first(conversation, annotator)
    ratings = _ratings(turns, [60, 40])
    first = rate_answers(conversation=conversation, annotator=annotator, ratings=ratings, chosen="A")
    again = rate_answers(conversation=conversation, annotator=annotator, ratings=ratings, chosen="A")
    assert again.pk == first.pk and CandidateRating.objects.count() == 2
    with pytest.raises(ConversationError) as refused:
        rate_answers(
            conversation=conversation, annotator=annotator, ratings=_ratings(turns, [61, 40]), chosen="A"
        )
    assert refused.value.code == "already_rated"
    assert str(refused.value) == (
        "You already rated these answers (A 60, B 40) and went on with A; your new ratings were not stored."
    )
    assert sorted(CandidateRating.objects.values_list("score", flat=True)) == [40, 60]


@pytest.mark.parametrize(
    "ratings, chosen, message",
    [
        ({"A": {"score": 50, "rubric": GOOD}}, "A", "Rate answer B too."),
        (
            {"A": {"score": 50, "rubric": GOOD}, "B": {"score": 50, "rubric": GOOD}, "C": {"score": 1}},
            "A",
            "There is no answer C to rate; rate A and B.",
        ),
        (
            {"A": {"score": 0, "rubric": GOOD}, "B": {"score": 50, "rubric": GOOD}},
            "A",
            "Answer A: the rating must be a whole number from 1 to 100.",
        ),
        (
            {"A": {"score": 101, "rubric": GOOD}, "B": {"score": 50, "rubric": GOOD}},
            "A",
            "Answer A: the rating must be a whole number from 1 to 100.",
        ),
        (
            {"A": {"score": True, "rubric": GOOD}, "B": {"score": 50, "rubric": GOOD}},
            "A",
            "Answer A: the rating must be a whole number from 1 to 100.",
        ),
        (
            {"A": {"score": 50.5, "rubric": GOOD}, "B": {"score": 50, "rubric": GOOD}},
            "A",
            "Answer A: the rating must be a whole number from 1 to 100.",
        ),
        # A form's text: plain digits only (int() would take "5_0" and Arabic-Indic digits as 50).
        *(
            (
                {"A": {"score": text, "rubric": GOOD}, "B": {"score": 50, "rubric": GOOD}},
                "A",
                "Answer A: the rating must be a whole number from 1 to 100.",
            )
            for text in ("5_0", "\u0665\u0660", "50.0", "+50", "", "0050")
        ),
        (
            {"A": {"score": 50, "rubric": GOOD}, "B": {"score": 50, "rubric": BAD}},
            "A",
            "Answer B: Tag the failure with at least one category.",
        ),
        (
            {"A": {"score": 50, "rubric": GOOD}, "B": {"score": 50, "rubric": GOOD}},
            "C",
            "Choose the answer to go on with: A and B.",
        ),
        (
            {"A": {"score": 50, "rubric": GOOD}, "B": {"score": 50, "rubric": GOOD}},
            None,
            "Choose the answer to go on with: A and B.",
        ),
        ([50, 50], "A", "Send a rating for each answer, by its letter."),
    ],
)
def test_bad_ratings_are_refused_with_the_answer_named_and_nothing_stored(
    conversation, annotator, ratings, chosen, message
):
    _first(conversation, annotator)
    with pytest.raises(ConversationError) as refused:
        rate_answers(conversation=conversation, annotator=annotator, ratings=ratings, chosen=chosen)
    assert (refused.value.code, str(refused.value)) == ("invalid", message)
    assert not CandidateRating.objects.exists()
    assert Conversation.objects.get(pk=conversation.pk).chosen_turn_id is None


def test_another_users_conversation_cannot_be_rated(conversation, annotator, validator):
    turns = _first(conversation, annotator)
    with pytest.raises(ConversationError) as refused:
        rate_answers(
            conversation=conversation, annotator=validator, ratings=_ratings(turns, [5, 5]), chosen="A"
        )
    assert refused.value.code == "not_found"


def test_judging_before_the_choice_is_refused(conversation, annotator):
    _first(conversation, annotator)
    with pytest.raises(ConversationError) as refused:
        submit_conversation(conversation=conversation, annotator=annotator, rubric_answers=GOOD)
    assert refused.value.code == "choose_first"
    assert not Example.objects.exists()


def test_more_models_than_the_round_has_are_refused_at_the_start(sbs_round, annotator):
    sbs_round.task.config["red_team"]["side_by_side"] = {"models": 4}
    sbs_round.task.save(update_fields=["config"])
    sbs_round.refresh_from_db()
    with pytest.raises(ConversationError) as refused:
        start_conversation(round_=sbs_round, annotator=annotator, context=make_passage(sbs_round))
    assert refused.value.code == "too_few_models"
    assert str(refused.value) == (
        "This task has 4 models answer each first message side by side, but round 1 has 3 ready target "
        "models; nothing was stored. The task owner must add targets to the round or lower "
        "red_team.side_by_side.models."
    )
    assert not Conversation.objects.exists()


def test_a_failed_answer_takes_no_rating_and_the_others_go_on(db, server, annotator, client):
    round_ = make_side_by_side_round(server.base_url, names=("alpha", "beta"), slug="red-two")
    failing = round_.targets.get(model__name="alpha").model
    failing.chat_model_name = "fault-500"
    failing.save(update_fields=["chat_model_name"])
    conversation = start_conversation(round_=round_, annotator=annotator, context=make_passage(round_))
    turns = _first(conversation, annotator)
    failed = next(t for t in turns if t.model.name == "alpha")
    ok = next(t for t in turns if t.model.name == "beta")
    assert (failed.status, ok.status) == ("failed", "answered")
    # The page says the failed answer never came (not that it broke off), and why, in one sentence each.
    client.force_login(annotator)
    shown = client.get("/tasks/red-two/red-team/").content.decode()
    assert f"This answer did not come, so it takes no rating. Why: {failed.error}" in shown
    assert ".." not in shown
    with pytest.raises(ConversationError) as refused:
        rate_answers(
            conversation=conversation,
            annotator=annotator,
            ratings=_ratings(turns, [5, 5]),
            chosen=ok.slot_letter,
        )
    assert str(refused.value) == f"There is no answer {failed.slot_letter} to rate; rate {ok.slot_letter}."
    rated = rate_answers(
        conversation=conversation, annotator=annotator, ratings=_ratings([ok], [70]), chosen=ok.slot_letter
    )
    assert rated.model.name == "beta"


def test_a_reader_who_leaves_stops_the_answer_and_the_later_ones_are_never_asked(
    conversation, annotator, server
):
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Hello")
    pieces = stream.pieces()
    assert next(pieces)[0] == 0
    pieces.close()
    first, second = (Turn.objects.get(pk=t.pk) for t in stream.turns)
    assert first.status == "answered" and first.generation["finish_reason"] == "cut_short"
    assert (second.status, second.error) == ("failed", UNREAD)
    assert len(server.requests) == 1  # the second model was never called
    # The writer can still rate what came and go on.
    rated = rate_answers(
        conversation=conversation, annotator=annotator, ratings=_ratings([first], [50]), chosen="A"
    )
    assert rated.chosen_turn_id == first.pk


def test_the_answers_are_generated_together_not_one_after_another(conversation, annotator, server):
    # The server holds every answer after its first half: B is asked while A is still being written.
    server.hold = threading.Event()
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Hello")
    pieces = stream.pieces()
    first_two = [next(pieces), next(pieces)]
    assert [slot for slot, _ in first_two] == [0, 1]
    assert server.first_sent == 2  # both answers were under way at once
    server.hold.set()
    rest = list(pieces)
    assert [slot for slot, _ in rest] == [0, 1]
    turns = [Turn.objects.get(pk=t.pk) for t in stream.turns]
    for turn, (_, head), (_, tail) in zip(turns, first_two, rest, strict=True):
        assert turn.status == "answered" and turn.answer == head + tail
        assert turn.answer == f"{turn.model.name} says: Hello"


def test_a_reader_who_leaves_after_both_began_stops_both_and_keeps_what_came(conversation, annotator, server):
    server.hold = threading.Event()
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Hello")
    pieces = stream.pieces()
    came = dict([next(pieces), next(pieces)])
    pieces.close()
    server.hold.set()
    for turn in (Turn.objects.get(pk=t.pk) for t in stream.turns):
        assert turn.status == "answered" and turn.generation["finish_reason"] == "cut_short"
        assert turn.answer == came[turn.slot]
    assert len(server.requests) == 2


def test_the_thread_and_the_messages_hold_only_the_chosen_answer(conversation, annotator):
    turns = _first(conversation, annotator)
    assert thread(conversation, turns) == []
    rated = rate_answers(
        conversation=conversation, annotator=annotator, ratings=_ratings(turns, [10, 90]), chosen="B"
    )
    kept = thread(rated, list(rated.turns.all()))
    assert kept == [turns[1]]
    assert messages_of(rated, kept, "Next")[-2:] == [
        {"role": "assistant", "content": turns[1].answer},
        {"role": "user", "content": "Next"},
    ]


def test_the_config_refuses_more_models_than_the_open_round_has(sbs_round):
    from django.core.exceptions import ValidationError

    from tasks.services import set_config

    task = sbs_round.task
    config = {**task.config, "red_team": {**task.config["red_team"], "side_by_side": {"models": 4}}}
    with pytest.raises(ValidationError) as refused:
        set_config(task=task, config=config)
    assert refused.value.messages == [
        "config['red_team']['side_by_side']['models']: 4 models cannot answer side by side: round 1 has 3 "
        "ready target models (alpha, beta, gamma). Add targets to the round first, or ask for at most 3."
    ]
    task.refresh_from_db()
    assert task.cfg.side_by_side == 2  # nothing stored
    for bad in ({"models": 1}, {"models": 5}, {"models": "2"}, {}):
        config["red_team"]["side_by_side"] = bad
        with pytest.raises(ValidationError):
            set_config(task=task, config=config)
    config["red_team"]["side_by_side"] = {"models": 3}
    assert set_config(task=task, config=config).cfg.side_by_side == 3


def test_the_admin_form_runs_the_check_for_its_task(sbs_round, admin_client):
    task = sbs_round.task
    import json

    config = {**task.config, "red_team": {**task.config["red_team"], "side_by_side": {"models": 4}}}
    from tasks.admin import TaskAdminForm

    form = TaskAdminForm(instance=task, data={"config": json.dumps(config)})
    form.is_valid()
    assert any("4 models cannot answer side by side" in m for m in form.errors.get("config", []))


def test_each_answer_is_reserved_at_its_models_prices_and_an_unread_one_costs_nothing(
    conversation, annotator
):
    from decimal import Decimal

    from annotation.models import BudgetCharge, RoundBudget
    from models_registry.models import RegisteredModel

    RegisteredModel.objects.update(
        generation={
            "max_new_tokens": 16,
            "temperature": 0.0,
            "timeout": 20,
            "price_input_per_million": 2.0,
            "price_output_per_million": 10.0,
        }
    )
    RoundBudget.objects.create(round=conversation.round, cap=Decimal("1"))
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Hello")
    charges = list(BudgetCharge.objects.order_by("turn__slot"))
    assert len(charges) == 2 and all(c.reserved > 0 and c.spent is None for c in charges)
    pieces = stream.pieces()
    next(pieces)
    pieces.close()
    first, second = (BudgetCharge.objects.get(turn=t) for t in stream.turns)
    assert first.spent is not None and first.spent > 0  # what was generated
    assert second.spent == Decimal(0)  # never asked


def test_a_budget_that_cannot_hold_every_answer_refuses_the_message_and_stores_none(conversation, annotator):
    from decimal import Decimal

    from annotation.models import BudgetCharge, RoundBudget
    from models_registry.models import RegisteredModel

    RegisteredModel.objects.update(
        generation={
            "max_new_tokens": 16,
            "temperature": 0.0,
            "price_input_per_million": 2.0,
            "price_output_per_million": 10.0,
        }
    )
    # One answer's worst case fits; two do not.
    from annotation.red_team import budget

    worst = budget.worst_case(
        conversation.round.targets.first().model, messages_of(conversation, [], "Hello"), 16
    )
    cap = worst * Decimal("1.5")
    budget_row = RoundBudget.objects.create(round=conversation.round, cap=cap)
    with pytest.raises(ConversationError) as refused:
        send_turn(conversation=conversation, annotator=annotator, prompt="Hello")
    assert refused.value.code == "budget"
    assert not Turn.objects.exists() and not BudgetCharge.objects.exists()
    # What was left before the message, all of it: not less one answer's reservation (as it once said).
    whole = (
        f"({budget.money(cap)} of {budget.money(cap)} left, not enough for the 2 answers to a first message)"
    )
    assert whole in str(refused.value)
    # The writer's own cap alike.
    budget_row.cap, budget_row.per_person = worst * 10, cap
    budget_row.save()
    with pytest.raises(ConversationError) as refused:
        send_turn(conversation=conversation, annotator=annotator, prompt="Hello")
    assert str(refused.value) == (
        f"You have used your share of this round's budget for the model {whole}; your message was not sent."
    )
    assert not Turn.objects.exists() and not BudgetCharge.objects.exists()


def test_two_registrations_of_one_folder_each_name_their_own_answers(db, smollm2_dir):
    """The weights are loaded once per folder (shared by every name they are registered under); each
    answer's record names the registration asked, as the side-by-side export and the arena need."""
    from models_registry.models import RegisteredModel
    from models_registry.serving import chat_stream
    from tests.factories.red_team import make_red_team_round

    round_ = make_red_team_round(smollm2_dir)
    first = round_.targets.get().model
    second = RegisteredModel.objects.create(
        task=round_.task, name="smollm2-terse", path=first.path, status="ready", generation=first.generation
    )
    messages = [{"role": "user", "content": "Hi"}]
    assert chat_stream(first, messages).drain().model == "smollm2"
    assert chat_stream(second, messages).drain().model == "smollm2-terse"
