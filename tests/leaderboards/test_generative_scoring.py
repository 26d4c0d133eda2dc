"""A red-teaming round's scoring dataset: its validated multiple-choice items, on which every generative
model is evaluated by accuracy (the real SmolLM2 here) and ranked on the leaderboard."""

from __future__ import annotations

import uuid

import pytest

from annotation.models import Example
from annotation.red_team.choice_items import write_choice_item
from leaderboards.evaluation import evaluate_model_on_dataset
from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Score
from leaderboards.scheduling import request_evaluations
from leaderboards.services import build_round_datasets
from tests.factories.red_team import make_passage, make_red_team_round

ITEMS = [
    ("How long is the Amazon?", "About 6,400 km", ["About 9,000 km", "About 100 km"]),
    ("Which country does the Amazon flow through?", "Brazil", ["Spain", "Japan"]),
    ("What flows through Brazil?", "The Amazon river", ["The Nile", "The Thames"]),
    ("Is the Amazon long?", "Yes, about 6,400 km", ["No, 10 km", "It is a lake"]),
]


@pytest.fixture
def scored_round(db, smollm2_dir, annotator):
    round_ = make_red_team_round(smollm2_dir)
    context = make_passage(round_)
    items = []
    for question, answer, negatives in ITEMS:
        example, _ = write_choice_item(
            round_=round_,
            annotator=annotator,
            context=context,
            question=question,
            answer=answer,
            negatives=negatives,
            client_token=uuid.uuid4(),
        )
        items.append(example)
    # Three validated; one pending; and a validated conversation, which is not machine-scorable.
    Example.objects.filter(pk__in=[e.pk for e in items[:3]]).update(status="validated_correct")
    Example.objects.create(
        round=round_,
        annotator=annotator,
        inputs={"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]},
        target={"supported": "no", "helpful": "1"},
        model_wrong=True,
        status="validated_correct",
        metadata={"mode": "conversation", "turns": 1},
    )
    return round_, items[:3]


def test_the_scoring_dataset_holds_the_validated_items_and_accuracy_is_the_share_picked_right(
    scored_round, smollm2
):
    round_, validated = scored_round
    datasets = build_round_datasets(round_).datasets
    assert list(datasets) == ["test"] and datasets["test"].access == "scoring"
    items = list(datasets["test"].items.order_by("pk"))
    assert [i.example_id for i in items] == [e.pk for e in validated]
    first = items[0]
    assert (
        first.inputs["options"] == validated[0].inputs["options"]
        and first.target == validated[0].target["answer"]
    )
    assert first.inputs["messages"][-1] == {"role": "user", "content": "How long is the Amazon?"}
    # Accuracy by hand: each item's pick by the runtime, against its answer.
    right = sum(smollm2.choose(i.inputs["messages"], i.inputs["options"]).picked == i.target for i in items)
    model = round_.targets.get().model
    evaluation = evaluate_model_on_dataset(model, datasets["test"])
    assert (
        evaluation.perf == right / 3
        and evaluation.metrics["n"] == 3
        and evaluation.metrics["correct"] == right
    )
    # The weights as loaded: float32 parameters after the GGUF's conversion.
    assert evaluation.metrics["memory"] == pytest.approx(
        sum(p.numel() * 4 for p in smollm2.model.parameters()) / 2**30, rel=0.01
    )
    assert evaluation.metrics["throughput"] > 0


def test_the_model_is_ranked_on_the_leaderboard(scored_round, client):
    round_, _ = scored_round
    build_round_datasets(round_)
    model = round_.targets.get().model
    model.is_published = True
    model.save(update_fields=["is_published"])
    for score_id in request_evaluations(model=model, queue=False):
        assert run_evaluation_job(score_id) == "done"
    score = Score.objects.get()
    assert score.metrics["perf_metric"] == "accuracy" and score.metrics["n"] == 3
    assert score.perf == score.metrics["correct"] / 3 and score.metrics["fairness"] is None
    page = client.get("/tasks/red-team/leaderboard/")
    assert page.status_code == 200 and "smollm2" in page.content.decode()
    board = client.get("/api/tasks/red-team/leaderboard/").json()
    assert [row["name"] for row in board["rows"]] == ["smollm2"]
    # The model's page shows the figures of a score without fairness, robustness or timed passes.
    card = client.get(f"/models/{model.pk}/")
    assert card.status_code == 200 and "Round 1 test" in card.content.decode()
