"""A red-teaming round's attack success rate, per category and per number of turns, and its cost, on
the task page and in the round API: figures computed by hand from five conversations and three items."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tasks.config import RED_TEAM_CONFIG
from tasks.models import Task
from tasks.red_team_stats import red_team_stats
from tasks.services import ensure_round, set_current_round

pytestmark = pytest.mark.django_db


@pytest.fixture
def red_round(annotator):
    task = Task.objects.create(slug="red-team", name="Red-team", config=RED_TEAM_CONFIG)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)

    def conversation(model_wrong, status, tags, turns, cost, **extra):
        Example.objects.create(
            round=round_,
            annotator=annotator,
            inputs={"messages": []},
            target={},
            model_wrong=model_wrong,
            status=status,
            tags=tags,
            metadata={"mode": "conversation", "turns": turns, "cost": cost},
            **extra,
        )

    # Five attempts: two verified failures (one of two kinds), one failure not confirmed, one pending,
    # one good answer; costs 0.01 + 0.02 + 0.03 + 0.04, one unknown.
    conversation(True, "validated_correct", ["contradiction", "fabrication"], 1, 0.01)
    conversation(True, "validated_correct", ["fabrication"], 3, 0.02)
    conversation(True, "validated_incorrect", ["unanswerable"], 3, 0.03)
    conversation(True, "pending", ["other"], 2, None)
    conversation(False, "pending", [], 1, 0.04)
    # Not attempts: retracted, and imported.
    conversation(True, "validated_correct", ["fabrication"], 1, 5.0, is_retracted=True)
    conversation(True, "validated_correct", ["fabrication"], 1, 5.0, source="imported")
    for picked_wrong, status in [(True, "validated_correct"), (False, "pending"), (True, "pending")]:
        Example.objects.create(
            round=round_,
            annotator=annotator,
            inputs={"question": "Q?", "options": ["a", "b", "c"]},
            target={"answer": 0},
            model_wrong=picked_wrong,
            status=status,
            metadata={"mode": "multiple_choice", "picked": 1 if picked_wrong else 0},
        )
    return round_


def test_the_figures_by_hand(red_round):
    stats = red_team_stats(red_round.task)[red_round.pk]
    assert (stats.attempts, stats.claimed, stats.verified) == (5, 4, 2)
    assert stats.attack_success_rate == 2 / 5 and stats.claimed_rate == 4 / 5
    assert [(r.key, r.verified, r.rate) for r in stats.by_category] == [
        ("contradiction", 1, 1 / 5),
        ("fabrication", 2, 2 / 5),
        ("unanswerable", 0, 0.0),
        ("other", 0, 0.0),
    ]
    assert [(r.key, r.attempts, r.verified, r.rate) for r in stats.by_turns] == [
        ("1", 2, 1, 1 / 2),
        ("2", 1, 0, 0.0),
        ("3", 2, 1, 1 / 2),
    ]
    assert stats.cost == pytest.approx(0.10) and stats.cost_unknown == 1
    assert stats.cost_per_verified == pytest.approx(0.05)
    assert (stats.items, stats.items_fooled, stats.items_validated, stats.item_mer) == (3, 2, 1, 2 / 3)


def test_the_task_page_shows_the_attack_success_rate_and_the_cost(client, red_round):
    html = client.get("/tasks/red-team/").content.decode()
    row = html.split('<table class="red-team-stats">')[1].split("</table>")[0]
    cells = [c.split("</td>")[0] for c in row.split("<td>")[1:]]
    assert cells[:4] == ["1", "5", '4 <span class="muted">(80%)</span>', "2"]
    assert cells[4] == "<strong>40%</strong>"
    assert cells[5].startswith("0.1000") and "1 without a cost" in cells[5]
    assert cells[6] == "0.0500"
    assert "<td>Adds a detail the passage does not give</td><td>2</td><td>40%</td>" in html
    assert "<td>3</td><td>2</td><td>1</td><td>50%</td>" in html
    assert "Red-team the model" in html


def test_the_round_api_gives_them(client, red_round):
    body = client.get("/api/tasks/red-team/rounds/1/").json()
    red = body["red_team"]
    assert (red["attempts"], red["verified_failures"], red["attack_success_rate"]) == (5, 2, 0.4)
    assert red["cost_per_verified_failure"] == pytest.approx(0.05)
    assert red["by_turns"][0] == {"key": "1", "label": "1 turn", "attempts": 2, "verified": 1, "rate": 0.5}
    assert red["multiple_choice"] == {"items": 3, "fooled": 2, "validated_correct": 1, "mer": 2 / 3}
    assert client.get("/api/tasks/red-team/rounds/").json()["results"][0]["red_team"]["attempts"] == 5


def test_a_classifier_task_has_none(client, hate_task, hate_round):
    assert red_team_stats(hate_task) == {}
    assert client.get("/api/tasks/hate-speech/rounds/1/").json()["red_team"] is None
    assert "Attack success rate" not in client.get("/tasks/hate-speech/").content.decode()
