"""Training a span target on the qa task's rounds (tiny backbone), through the shared entry point."""

from __future__ import annotations

import pytest

from annotation.models import Example
from cycle.training.planning import TargetTrainingError
from cycle.training.targets import train_target_for_rounds
from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Score
from leaderboards.scheduling import pending_evaluations
from leaderboards.selectors import card_test_figures
from tasks.models import Context

pytestmark = pytest.mark.django_db

PASSAGES = [
    "the cat is happy and the dog is sad",
    "we love our friends and our neighbours",
    "the man and the woman go home",
]


def _example(round_, context, question, answer, split, answers=None):
    passage = context.data["context"]
    target = {"answer": answer, "answer_start": passage.index(answer)}
    if answers:
        target["answers"] = [{"text": a, "answer_start": passage.index(a)} for a in answers]
    return Example.objects.create(
        round=round_,
        context=context,
        inputs={"question": question},
        target=target,
        split=split,
        status=Example.Status.VALIDATED_CORRECT,
        source=Example.Source.IMPORTED,
        external_id=question,
    )


@pytest.fixture
def qa_data(qa_task):
    from tasks.services import ensure_round

    round_ = ensure_round(task=qa_task, number=1)
    contexts = [
        Context.objects.create(
            task=qa_task, round=round_, data={"title": "t", "context": p}, external_id=f"c{n}"
        )
        for n, p in enumerate(PASSAGES)
    ]
    _example(round_, contexts[0], "who is happy?", "the cat", "train", ["the cat", "cat"])
    _example(round_, contexts[0], "who is sad?", "the dog", "train")
    _example(round_, contexts[1], "who do we love?", "our friends", "train")
    _example(round_, contexts[1], "who else?", "our neighbours", "dev")
    _example(round_, contexts[2], "who goes home?", "the man and the woman", "test")
    _example(round_, contexts[2], "who else goes?", "the woman", "test")
    return round_


def test_a_span_task_trains_a_span_target_with_f1_and_em_in_its_card(qa_task, qa_data, tiny_backbone_dir):
    model = train_target_for_rounds(
        task=qa_task,
        rounds=[1],
        recipe="quick",
        name="tiny-qa-target",
        target_round=1,
        backbone_path=tiny_backbone_dir,
    )
    assert model.status == model.Status.READY, model.error_message
    card = model.card
    assert card["training"]["n_train"] == 3 and card["dev"]["n"] == 1
    # Test F1 / EM come from the leaderboard's evaluation of round 1's test split.
    assert "test" not in card and card["test_datasets"] == ["round-1-test"]
    assert card_test_figures(model) == {}
    for score_id in pending_evaluations(model=model):
        run_evaluation_job(score_id)
    test = card_test_figures(model)["round-1-test"]
    score = Score.objects.get(model=model, dataset__slug="round-1-test")
    assert test["n"] == 2 and 0.0 <= test["exact_match"] <= test["f1"] <= 1.0
    assert (test["f1"], test["exact_match"]) == (score.metrics["f1"], score.metrics["exact_match"])
    assert card["trained_on_target_round"] is True and "never seen in training" in card["note"]
    assert list(qa_data.targets.values_list("model__name", flat=True)) == ["tiny-qa-target"]
    assert card["licence"].startswith("CC BY-SA 4.0")


def test_no_training_examples_is_a_clear_error(qa_task, tiny_backbone_dir):
    from tasks.services import ensure_round

    ensure_round(task=qa_task, number=1)
    with pytest.raises(TargetTrainingError, match="import_qa_data"):
        train_target_for_rounds(task=qa_task, rounds=[1], backbone_path=tiny_backbone_dir)
