"""Validators' agreement per rubric question (tasks/rubric_agreement.py): alpha worked by hand and
checked against the ``krippendorff`` package, per kind of failure, the floor, and the rates it greys on
the task page and in the round API."""

from __future__ import annotations

import copy

import krippendorff
import numpy as np
import pytest

from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Task
from tasks.red_team_stats import red_team_stats
from tasks.rubric_agreement import rubric_agreement
from tasks.services import ensure_round, set_current_round
from tests.tasks.test_red_team_stats import Tables, conversation
from validation.models import Validation

pytestmark = pytest.mark.django_db

#: Per conversation: (author's kinds, [(supported, helpful) per validator]).
ANSWERS = [
    (["fabrication"], [("yes", "5"), ("yes", "5")]),
    (["fabrication"], [("no", "1"), ("no", "2")]),
    ([], [("yes", "4"), ("no", "5")]),
    ([], [("yes", "3"), ("yes", "3")]),
]


@pytest.fixture
def rated(annotator, django_user_model):
    task = Task.objects.create(slug="red-team", name="Red-team", config=copy.deepcopy(RED_TEAM_CONFIG))
    round1 = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round1)
    validators = [django_user_model.objects.create_user(username=f"v{i}", password="x") for i in range(2)]
    for tags, answers in ANSWERS:
        example = conversation(round1, annotator, bool(tags), "validated_correct", tags, 1, 0.01)
        for validator, (supported, helpful) in zip(validators, answers, strict=True):
            Validation.objects.create(
                example=example,
                validator=validator,
                verdict="correct",
                rubric_answers={"supported": supported, "helpful": helpful},
            )
        # An owner's verdict settles; it does not code, so it is left out.
        Validation.objects.create(
            example=example,
            validator=task_owner(django_user_model),
            verdict="correct",
            is_owner_verdict=True,
            rubric_answers={"supported": "no", "helpful": "1"},
        )
    return task, round1


def task_owner(django_user_model):
    return django_user_model.objects.get_or_create(username="the-owner")[0]


def test_alpha_per_question_by_hand_and_against_the_krippendorff_package(rated):
    task, round1 = rated
    agreement = rubric_agreement(task, [round1])[round1.pk]
    supported, helpful = agreement.questions
    # supported (nominal): coincidences yes-yes 4, no-no 2, yes-no 1, no-yes 1; n_yes 5, n_no 3, n 8;
    # alpha = 1 - (8 - 1) * 2 / (2 * 5 * 3) = 16/30 = 0.5333.
    assert (supported.level, supported.overall.items, supported.overall.answers) == ("nominal", 4, 8)
    assert supported.overall.alpha == pytest.approx(16 / 30)
    data = np.array([[float(a[v][1]) for _, a in ANSWERS] for v in range(2)])
    reference = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert helpful.level == "ordinal" and helpful.overall.alpha == pytest.approx(reference)
    # Per kind: the two "fabrication" conversations agree on "supported" exactly.
    assert supported.by_category["fabrication"].alpha == pytest.approx(1.0)
    assert supported.by_category["contradiction"].items == 0
    low, high = supported.overall.interval
    assert low < 16 / 30 < high and low < 0.667
    assert "validators do not agree enough on 'supported'" in agreement.unreliable
    assert "alpha 0.53" in agreement.unreliable


def test_the_page_and_the_api_grey_the_rates(rated, client):
    task, round1 = rated
    stats = red_team_stats(task, [round1])[round1.pk]
    assert stats.unreliable and all(r.unreliable for r in stats.by_category + stats.by_turns)
    html = client.get("/tasks/red-team/").content.decode()
    assert '<td class="unreliable">' in html and "Greyed: validators do not agree enough on" in html
    table = Tables(html).tables[
        "Round 1: validators' agreement per rubric question (Krippendorff's alpha, 95% interval, conversations)"
    ]
    assert table[1][0] == "Is everything the answer states about the passage supported by it? (nominal)"
    assert table[1][1].startswith("0.53 (")
    api = client.get("/api/tasks/red-team/rounds/1/").json()["statistics"]["red_team"]
    assert api["rubric_agreement"]["questions"][0]["overall"]["alpha"] == pytest.approx(16 / 30)
    assert api["rubric_agreement"]["unreliable"].startswith("validators do not agree enough on 'supported'")
    assert api["by_category"][0]["unreliable"]


def test_the_floor_is_the_lower_end_of_the_interval(rated):
    from core.reliability import Reliability
    from tasks.rubric_agreement import below

    assert below(Reliability("nominal", 40, 80, 0.8, (0.6, 0.9)), 0.667)
    assert not below(Reliability("nominal", 40, 80, 0.8, (0.7, 0.9)), 0.667)
    assert not below(Reliability("nominal", 1, 2, None, None), 0.667)  # not measured greys nothing
    task, _ = rated
    assert task.cfg.agreement_floor == 0.667
    task.config["red_team"]["agreement_floor"] = 0.5
    task.save()
    task.refresh_from_db()
    assert task.cfg.agreement_floor == 0.5


def test_a_question_level_can_be_set_in_the_config():
    from tasks.rubric import RubricQuestion

    scale = RubricQuestion.from_config(
        {"name": "q", "question": "?", "answers": ["1", "2"], "failure_answers": ["1"]}
    )
    named = RubricQuestion.from_config(
        {"name": "q", "question": "?", "answers": ["low", "high"], "failure_answers": ["low"]}
    )
    forced = RubricQuestion.from_config(
        {"name": "q", "question": "?", "answers": ["1", "2"], "failure_answers": ["1"], "level": "nominal"}
    )
    assert (scale.measurement, named.measurement, forced.measurement) == ("ordinal", "nominal", "nominal")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2, -0.1, "x"])
def test_an_agreement_floor_that_is_not_a_share_is_refused(bad):
    from django.core.exceptions import ValidationError

    from tasks.config import validate_config

    config = copy.deepcopy(RED_TEAM_CONFIG)
    config["red_team"]["agreement_floor"] = bad
    with pytest.raises(ValidationError) as refused:
        validate_config(config)
    assert "agreement_floor" in str(refused.value)
