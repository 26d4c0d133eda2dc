"""MER and vMER count only examples whose model verdict is known (docs/domain.md, "MER and vMER").

An example is scored when its ``model_wrong`` is true or false. It is unscored (``model_wrong`` None)
when its target model failed (``prediction_status=failed``), when the round has no target
(``prediction_status=none``) or, under ``ask_user``, while its author has not said whether the model
was wrong. Unscored examples are in neither numerator nor denominator and are counted apart; a round
with none scored has MER and vMER None ("not measured"), never 0.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Example
from annotation.services import create_example
from tasks import round_stats
from tasks.services import ensure_round, set_current_round
from tests.factories.annotation import make_example

pytestmark = pytest.mark.django_db

P = Example.PredictionStatus


@pytest.fixture
def mixed_round(hate_round, annotator, validator):
    """By hand: A fooled (settled validated_correct), B and C not fooled: 3 scored, 1 fooling, 1 verified.
    D's target failed and E was written with no target: 2 unscored. A retracted fooled one counts nowhere.

    collected 5, scored 3, unscored 2 -> MER 1/3, vMER 1/3 (counting D and E would give 1/5).
    """
    make_example(hate_round, annotator, model_wrong=True, status=Example.Status.VALIDATED_CORRECT)  # A
    make_example(hate_round, validator, model_wrong=False)  # B
    make_example(hate_round, annotator, model_wrong=False)  # C
    make_example(hate_round, annotator, model_wrong=None, prediction_status=P.FAILED)  # D
    make_example(hate_round, validator, model_wrong=None, prediction_status=P.NONE)  # E
    make_example(hate_round, annotator, model_wrong=True, is_retracted=True)
    return hate_round


@pytest.fixture
def no_target_round(hate_task, annotator, validator):
    """Round 2, current, with no target model: two examples written through the create service."""
    round_ = ensure_round(task=hate_task, number=2)
    set_current_round(task=hate_task, round_=round_)
    for user, statement, label in [
        (annotator, "I hate them", "hateful"),
        (validator, "hello", "not-hateful"),
    ]:
        create_example(task=hate_task, annotator=user, inputs={"statement": statement}, target=label)
    return round_


def test_unscored_examples_are_out_of_mer_and_vmer(mixed_round):
    c = round_stats.round_counts(mixed_round)
    assert c.mer == pytest.approx(1 / 3)
    assert c.vmer == pytest.approx(1 / 3)
    assert (c.collected, c.scored, c.unscored, c.fooling, c.verified) == (5, 3, 2, 1, 1)


def test_an_ask_user_example_awaiting_its_author_is_unscored(hate_round, annotator):
    """A fooled and verified, B fooled and pending, C not fooled; F answered by the model (ok) but
    its author has not said yet whether it was wrong: scored 3, MER 2/3, vMER 1/3, unscored 1."""
    make_example(hate_round, annotator, model_wrong=True, status=Example.Status.VALIDATED_CORRECT)
    make_example(hate_round, annotator, model_wrong=True)
    make_example(hate_round, annotator, model_wrong=False)
    make_example(hate_round, annotator, model_wrong=None, prediction_status=P.OK)
    c = round_stats.round_counts(hate_round)
    assert c.mer == pytest.approx(2 / 3)
    assert c.vmer == pytest.approx(1 / 3)
    assert (c.collected, c.scored, c.unscored, c.fooling, c.verified) == (4, 3, 1, 2, 1)


def test_a_round_without_a_target_is_not_measured(no_target_round):
    c = round_stats.round_counts(no_target_round)
    assert c.mer is None
    assert c.vmer is None
    assert (c.collected, c.scored, c.unscored, c.fooling) == (2, 0, 2, 0)


def test_rate_helper():
    assert round_stats.rate(1, 3) == pytest.approx(1 / 3)
    assert round_stats.rate(0, 4) == 0.0
    assert round_stats.rate(0, 0) is None


def test_api_gives_null_for_a_round_without_a_target(api, mixed_round, no_target_round):
    stats = api(None).get("/api/tasks/hate-speech/rounds/2/").json()["statistics"]
    assert stats["mer"] is None and stats["vmer"] is None
    assert (stats["examples"], stats["scored"], stats["unscored"], stats["fooling"]) == (2, 0, 2, 0)

    first = api(None).get("/api/tasks/hate-speech/rounds/1/").json()["statistics"]
    assert (first["examples"], first["scored"], first["unscored"]) == (5, 3, 2)
    assert first["mer"] == pytest.approx(1 / 3) and first["vmer"] == pytest.approx(1 / 3)
    listed = api(None).get("/api/tasks/hate-speech/rounds/").json()["results"]
    assert [r["statistics"]["mer"] for r in listed] == [pytest.approx(1 / 3), None]


def test_task_page_says_not_measured_and_counts_the_awaiting(client, hate_task, mixed_round, no_target_round):
    response = client.get(reverse("tasks:detail", args=[hate_task.slug]))
    assert response.status_code == 200
    first, second = response.context["round_counts"]
    assert (first.mer, second.mer) == (pytest.approx(1 / 3), None)
    text = response.text
    assert "33%" in text and "not measured" in text
    assert "2 awaiting a model verdict" in text
    chart = response.context["mer_chart"]
    # Round 2 has no scored example: no point (not a point at 0) for either series.
    assert [p.label for p in chart.points["MER"]] == ["1"]
    assert [p.label for p in chart.points["vMER"]] == ["1"]
    assert [p.value for p in chart.points["MER"]] == pytest.approx([1 / 3])


def test_round_admin_says_not_measured(client, owner, password, mixed_round, no_target_round):
    client.login(username=owner.username, password=password)
    response = client.get(reverse("admin:tasks_round_changelist"))
    assert response.status_code == 200
    text = response.text
    assert "33.3%" in text and "not measured" in text
    assert "0.0%" not in text
