"""The start-round pages for owners: each candidate target with its scores on the datasets it was
evaluated on, the rounds whose data trained it, which one is the current target, and a warning with the
number of examples of the closing round still waiting for validation."""

from __future__ import annotations

import pytest
from django.contrib.admin import helpers
from django.urls import reverse

from cycle.models import TrainingJob
from leaderboards.models import Score
from tests.factories.annotation import make_example
from tests.factories.leaderboards import DatasetFactory
from tests.factories.models_registry import RegisteredModelFactory


@pytest.fixture
def owner_client(client, owner, password):
    client.login(username=owner.username, password=password)
    return client


@pytest.fixture
def candidates(hate_task, hate_round, rule_model, owner):
    """``rule_model`` ("stand-in", round 1's target, no scores, nothing known of its training); "trained"
    (made by a done training job on rounds 2 and 1, scored 0.712 on HateCheck and 0.655 on Round 1 test);
    "carded" (its card says rounds [1]); a failed model (not a candidate)."""
    trained = RegisteredModelFactory(task=hate_task, name="trained")
    TrainingJob.objects.create(task=hate_task, rounds=[2, 1], status="done", model=trained)
    TrainingJob.objects.create(task=hate_task, rounds=[3], status="failed", model=trained)
    Score.objects.filter(model=trained).delete()
    for slug, name, perf in (("hatecheck", "HateCheck", 0.712), ("round-1-test", "Round 1 test", 0.655)):
        Score.objects.create(model=trained, dataset=DatasetFactory(task=hate_task, slug=slug, name=name),
                             status="done", perf=perf)  # fmt: skip
    Score.objects.create(
        model=trained, dataset=DatasetFactory(task=hate_task, slug="pending-set"), status="pending"
    )
    carded = RegisteredModelFactory(task=hate_task, name="carded", card={"training": {"rounds": [1]}})
    RegisteredModelFactory(task=hate_task, name="broken", status="failed")
    return {"stand-in": rule_model, "trained": trained, "carded": carded}


def _row(page: str, model) -> str:
    return page.split(f'<tr data-model="{model.pk}"')[1].split("</tr>")[0]


def test_start_round_lists_scores_training_rounds_and_current_target(
    owner_client, hate_task, hate_round, candidates, annotator
):
    make_example(hate_round, annotator, model_wrong=True)  # waiting
    make_example(hate_round, annotator, model_wrong=True)  # waiting
    make_example(hate_round, annotator, model_wrong=True, status="validated_correct")  # settled
    make_example(hate_round, annotator, model_wrong=False)  # not fooling: validators are not served it
    make_example(hate_round, annotator, model_wrong=True, is_retracted=True)  # retracted
    page = owner_client.get(reverse("admin:tasks_task_start_round", args=[hate_task.pk])).text

    trained = _row(page, candidates["trained"])
    assert (
        "HateCheck: <strong>0.712</strong>" in trained and "Round 1 test: <strong>0.655</strong>" in trained
    )
    assert "PENDING-SET" not in trained  # not evaluated yet: no score shown
    assert "rounds 1, 2" in trained and "current target" not in trained
    assert 'type="checkbox"' in trained and 'name="models"' in trained
    carded = _row(page, candidates["carded"])
    assert "round 1" in carded and "(model card)" in carded and "not evaluated yet" in carded
    stand_in = _row(page, candidates["stand-in"])
    assert "current target of round 1" in stand_in and "unknown" in stand_in
    assert "broken" not in page.split('id="candidate-targets"')[1].split("</table>")[0]

    warning = page.split('id="waiting-warning"')[1].split("</p>")[0]
    assert "Round 1 still has\n  2 examples waiting for validation" in warning


def test_no_warning_when_nothing_waits(owner_client, hate_task, hate_round, candidates, annotator):
    make_example(hate_round, annotator, model_wrong=True, status="validated_correct")
    page = owner_client.get(reverse("admin:tasks_task_start_round", args=[hate_task.pk])).text
    assert 'id="waiting-warning"' not in page
    assert 'id="candidate-targets"' in page


def test_the_form_still_starts_the_round_with_the_ticked_model(
    owner_client, hate_task, hate_round, candidates
):
    url = reverse("admin:tasks_task_start_round", args=[hate_task.pk])
    response = owner_client.post(url, {"description": "", "models": [candidates["trained"].pk],
                                       "round_number": "2"})  # fmt: skip
    assert response.status_code == 302
    hate_task.refresh_from_db()
    assert hate_task.current_round.number == 2
    assert list(hate_task.current_round.targets.values_list("model__name", flat=True)) == ["trained"]


def test_no_choice_is_a_form_error(owner_client, hate_task, hate_round, candidates):
    url = reverse("admin:tasks_task_start_round", args=[hate_task.pk])
    response = owner_client.post(url, {"description": "", "round_number": "2"})
    assert response.status_code == 200
    assert "Choose at least one target model." in response.text
    assert 'id="candidate-targets"' in response.text


def test_start_next_round_action_page_shows_the_facts_and_the_warning(
    owner_client, hate_task, hate_round, candidates, annotator
):
    make_example(hate_round, annotator, model_wrong=True)
    response = owner_client.post(
        reverse("admin:models_registry_registeredmodel_changelist"),
        {"action": "start_next_round_with_models", helpers.ACTION_CHECKBOX_NAME: [candidates["trained"].pk]},
    )
    page = response.text
    assert response.status_code == 200
    assert "HateCheck: <strong>0.712</strong>" in _row(page, candidates["trained"])
    assert "Round 1 still has\n  1 example waiting for validation" in page
