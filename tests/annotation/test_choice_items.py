"""Multiple-choice items on a red-teaming round with the real SmolLM2 as target: the server decides
which option the target picks by the options' likelihoods, and the item is stored once."""

from __future__ import annotations

import uuid

import pytest

from annotation.models import Example, Prediction
from annotation.red_team.choice_items import choice_messages, write_choice_item
from annotation.red_team.conversations import ConversationError
from tests.factories.red_team import make_passage, make_red_team_round


@pytest.fixture
def red_round(db, smollm2_dir):
    return make_red_team_round(smollm2_dir)


def test_the_target_picks_the_option_with_the_highest_normalised_likelihood(red_round, annotator, smollm2):
    context = make_passage(red_round)
    token = uuid.uuid4()
    example, created = write_choice_item(
        round_=red_round,
        annotator=annotator,
        context=context,
        question="How long is the Amazon?",
        answer="About 6,400 km",
        negatives=["About 7,000 km", "About 4,000 miles"],
        client_token=token,
    )
    assert created
    options = example.inputs["options"]
    assert sorted(options) == sorted(["About 6,400 km", "About 7,000 km", "About 4,000 miles"])
    assert options[example.target["answer"]] == "About 6,400 km"
    # The same scores the runtime gives for the messages the item stored.
    scores = smollm2.choose(choice_messages(context, "How long is the Amazon?", red_round), options)
    assert example.metadata["picked"] == scores.picked
    # float32 log-likelihoods summed over the option's tokens: the service's call runs on the generation
    # slot's thread, whose torch kernels may split the sums differently (seen: 5e-5 apart), so the scores
    # agree to 1e-4, not to the last bit; the pick and the verdict are exact.
    assert example.metadata["normalised"] == pytest.approx(list(scores.normalised), rel=1e-4)
    assert example.model_wrong is (scores.picked != example.target["answer"])
    prediction = Prediction.objects.get(example=example)
    assert (prediction.label, prediction.model_wrong) == (str(scores.picked), example.model_wrong)
    again, created_again = write_choice_item(
        round_=red_round,
        annotator=annotator,
        context=context,
        question="How long is the Amazon?",
        answer="About 6,400 km",
        negatives=["About 7,000 km", "About 4,000 miles"],
        client_token=token,
    )
    assert (again.pk, created_again) == (example.pk, False)
    assert Example.objects.count() == 1 and Prediction.objects.count() == 1


@pytest.mark.parametrize(
    "answer, negatives, message",
    [
        ("Paris", ["Lyon"], "Write at least 2 wrong answers (hard negatives); you wrote 1."),
        ("Paris", ["Lyon", "  "], "Write at least 2 wrong answers (hard negatives); you wrote 1."),
        ("Paris", ["Lyon", "paris "], "Two options are the same; each option must differ."),
        (
            "Paris",
            ["a", "b", "c", "d", "e"],
            "At most 5 options in all: the correct answer and 4 wrong ones.",
        ),
        ("Par\ud800is", ["Lyon", "Nice"], "The correct answer holds a lone surrogate, which is not text."),
    ],
)
def test_bad_items_are_refused_and_nothing_is_stored(red_round, annotator, answer, negatives, message):
    with pytest.raises(ConversationError) as refused:
        write_choice_item(
            round_=red_round,
            annotator=annotator,
            context=make_passage(red_round),
            question="Where?",
            answer=answer,
            negatives=negatives,
        )
    assert (refused.value.code, str(refused.value)) == ("invalid", message)
    assert not Example.objects.exists()


def test_an_item_needs_a_passage_on_this_task(red_round, annotator):
    with pytest.raises(ConversationError) as refused:
        write_choice_item(
            round_=red_round, annotator=annotator, question="Q?", answer="a", negatives=["b", "c"]
        )
    assert refused.value.code == "bad_context"
