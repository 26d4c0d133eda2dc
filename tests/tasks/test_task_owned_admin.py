"""The Django admin for task owners: their changelists open, they see only their tasks' rows,
the config is validated on save, and changelists do not make one query per row."""

from __future__ import annotations

import copy
import json

import pytest
from django.urls import reverse

from annotation.models import Example
from annotation.services import create_example
from leaderboards.models import Dataset, DatasetItem
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Task
from tasks.services import ensure_round, set_current_round

CHANGELISTS = [
    "tasks_task",
    "tasks_round",
    "tasks_context",
    "annotation_example",
    "validation_validation",
    "leaderboards_dataset",
    "leaderboards_datasetitem",
    "leaderboards_score",
]


def _create(task, user, statement, label="hateful"):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target=label)[0]


@pytest.fixture
def other_task(db):
    task = Task.objects.create(slug="other", name="Other task", config=copy.deepcopy(HATE_SPEECH_CONFIG))
    set_current_round(task=task, round_=ensure_round(task=task, number=1))
    return task


@pytest.fixture
def owner_client(client, owner, password):
    client.login(username=owner.username, password=password)
    return client


@pytest.mark.parametrize("name", CHANGELISTS)
def test_owner_opens_the_changelists(owner_client, hate_round, rule_model, annotator, name):
    _create(hate_round.task, annotator, "I hate them")
    Dataset.objects.create(task=hate_round.task, slug="r1", name="Round 1", kind="round", round=hate_round)
    response = owner_client.get(reverse(f"admin:{name}_changelist"))
    assert response.status_code == 200


def test_owner_sees_only_their_tasks_examples(owner_client, hate_task, annotator, rule_model, other_task):
    mine = _create(hate_task, annotator, "I hate them")
    theirs = Example.objects.create(
        round=other_task.current_round, inputs={"statement": "x"}, target="hateful"
    )
    response = owner_client.get(reverse("admin:annotation_example_changelist"))
    assert list(response.context["cl"].result_list) == [mine]
    assert owner_client.get(reverse("admin:annotation_example_change", args=[mine.pk])).status_code == 200
    assert owner_client.get(reverse("admin:annotation_example_change", args=[theirs.pk])).status_code == 302
    tasks = owner_client.get(reverse("admin:tasks_task_changelist")).context["cl"].result_list
    assert list(tasks) == [hate_task]


def test_example_page_shows_predictions_and_search_finds_text(owner_client, hate_task, annotator, rule_model):
    example = _create(hate_task, annotator, "Они уходят домой 🏠")
    _create(hate_task, annotator, "hello world")
    page = owner_client.get(reverse("admin:annotation_example_change", args=[example.pk]))
    assert "stand-in" in page.text and "not-hateful" in page.text
    found = owner_client.get(reverse("admin:annotation_example_changelist"), {"q": "уходят"})
    assert list(found.context["cl"].result_list) == [example]


def test_round_changelist_shows_counts(owner_client, hate_task, annotator, rule_model):
    _create(hate_task, annotator, "go back home")  # fooled
    _create(hate_task, annotator, "I hate them")
    _create(hate_task, annotator, "they should leave")  # fooled
    _create(hate_task, annotator, "hate", "not-hateful")  # fooled
    response = owner_client.get(reverse("admin:tasks_round_changelist"))
    [row] = response.context["cl"].result_list
    assert (row.n_collected, row.n_fooling) == (4, 3)
    assert "75.0%" in response.text


def test_dataset_changelist_counts_items(owner_client, hate_task):
    dataset = Dataset.objects.create(task=hate_task, slug="hatecheck", name="HateCheck", kind="static")
    for i in range(3):
        DatasetItem.objects.create(
            dataset=dataset, external_id=str(i), inputs={"statement": "x"}, target="hateful"
        )
    response = owner_client.get(reverse("admin:leaderboards_dataset_changelist"))
    [row] = response.context["cl"].result_list
    assert row.n_items == 3


def _task_form(task, round_, config, instructions="x"):
    return {
        "name": task.name,
        "slug": task.slug,
        "config": json.dumps(config),
        "instructions": instructions,
        "owners": [u.pk for u in task.owners.all()],
        "current_round": round_.pk,
        "validation_quorum": 3,
        "is_active": "on",
        "gold_share": "0",
        "gold_min_answers": "5",
        "rounds-TOTAL_FORMS": "1",
        "rounds-INITIAL_FORMS": "1",
        "rounds-MIN_NUM_FORMS": "0",
        "rounds-MAX_NUM_FORMS": "1000",
        "rounds-0-id": round_.pk,
        "rounds-0-task": task.pk,
        "tutorial_items-TOTAL_FORMS": "0",
        "tutorial_items-INITIAL_FORMS": "0",
        "tutorial_items-MIN_NUM_FORMS": "0",
        "tutorial_items-MAX_NUM_FORMS": "1000",
    }


def test_owner_saves_a_valid_task(owner_client, hate_task, hate_round):
    url = reverse("admin:tasks_task_change", args=[hate_task.pk])
    response = owner_client.post(
        url, _task_form(hate_task, hate_round, HATE_SPEECH_CONFIG, "New instructions")
    )
    assert response.status_code == 302
    hate_task.refresh_from_db()
    assert hate_task.instructions == "New instructions"


def test_invalid_config_is_refused_with_its_path(owner_client, hate_task, hate_round):
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    del config["target_field"]["labels"]
    url = reverse("admin:tasks_task_change", args=[hate_task.pk])
    response = owner_client.post(url, _task_form(hate_task, hate_round, config))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["config"] == [
        "config['target_field']: a multiclass target needs at least two labels."
    ]
    hate_task.refresh_from_db()
    assert hate_task.config["target_field"]["labels"] == ["hateful", "not-hateful"]


def test_the_current_round_and_a_rounds_closed_box_are_read_only(owner_client, hate_task, hate_round):
    """Rounds open, close and switch only through the services (which end the studies of a round that
    stops collecting): the admin forms show those fields read-only and ignore them when posted."""
    round2 = ensure_round(task=hate_task, number=2)
    task_page = owner_client.get(reverse("admin:tasks_task_change", args=[hate_task.pk]))
    assert "current_round" not in task_page.context["adminform"].form.fields
    round_page = owner_client.get(reverse("admin:tasks_round_change", args=[hate_round.pk]))
    assert "is_closed" not in round_page.context["adminform"].form.fields
    response = owner_client.post(
        reverse("admin:tasks_task_change", args=[hate_task.pk]),
        _task_form(hate_task, round2, hate_task.config),
    )
    assert response.status_code == 302
    hate_task.refresh_from_db()
    assert hate_task.current_round == hate_round


def test_the_round_admin_makes_a_round_current_through_the_service(owner_client, hate_task, hate_round):
    from crowd.models import Study
    from tests.factories.crowd import make_study

    study = make_study(hate_round)
    round2 = ensure_round(task=hate_task, number=2)
    url = reverse("admin:tasks_round_changelist")
    both = owner_client.post(url, {"action": "make_current", "_selected_action": [hate_round.pk, round2.pk]})
    assert both.status_code == 302
    hate_task.refresh_from_db()
    assert hate_task.current_round == hate_round  # two rounds: refused, nothing changed
    owner_client.post(url, {"action": "make_current", "_selected_action": [round2.pk]})
    hate_task.refresh_from_db()
    assert hate_task.current_round == round2
    # The round it replaced stopped collecting: its study ended with it (tasks.signals.round_ended).
    ended = Study.objects.get(pk=study.pk)
    assert not ended.is_open and ended.ended_at is not None


def test_crowd_adds_its_rule_first_to_the_contribution_rules(db):
    from tasks import qualification

    assert qualification.contribution_rules() == ["study", *qualification.CODES]


def test_staff_without_tasks_is_refused(client, outsider, password, hate_round):
    outsider.is_staff = True
    outsider.save()
    client.login(username=outsider.username, password=password)
    assert client.get(reverse("admin:annotation_example_changelist")).status_code == 403


def test_example_changelist_query_count_does_not_grow_with_rows(
    owner_client, hate_task, annotator, rule_model, django_assert_max_num_queries
):
    _create(hate_task, annotator, "first")
    url = reverse("admin:annotation_example_changelist")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as one:
        owner_client.get(url)
    for i in range(10):
        _create(hate_task, annotator, f"statement {i}")
    with django_assert_max_num_queries(len(one.captured_queries)):
        owner_client.get(url)


def test_task_page_lists_its_rounds_for_the_owner(owner_client, hate_task, hate_round):
    response = owner_client.get(reverse("admin:tasks_task_change", args=[hate_task.pk]))
    assert response.status_code == 200
    assert reverse("admin:tasks_round_change", args=[hate_round.pk]) in response.text


def test_owner_adds_rounds_only_to_their_tasks(owner_client, hate_task, other_task):
    response = owner_client.get(reverse("admin:tasks_round_add"))
    assert response.status_code == 200
    assert list(response.context["adminform"].form.fields["task"].queryset) == [hate_task]


def test_new_task_with_invalid_config_names_the_problem_once(admin_client):
    response = admin_client.post(
        reverse("admin:tasks_task_add"),
        {
            "name": "New",
            "slug": "new",
            "config": json.dumps({"input_fields": []}),
            "validation_quorum": 3,
            "rounds-TOTAL_FORMS": "0",
            "rounds-INITIAL_FORMS": "0",
            "rounds-MIN_NUM_FORMS": "0",
            "rounds-MAX_NUM_FORMS": "1000",
        },
    )
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.non_field_errors() == []
    assert "config: 'target_field' is a required property" in form.errors["config"]
    assert "config['input_fields']: [] should be non-empty" in form.errors["config"]
    assert not Task.objects.filter(slug="new").exists()


def test_a_rounds_task_and_number_are_fixed_once_it_exists(
    owner_client, hate_task, hate_round, sentiment_task
):
    """Its examples, contexts and studies were collected under them: moving round 1 of hate-speech to
    round 9 of another task would carry them along."""
    url = reverse("admin:tasks_round_change", args=[hate_round.pk])
    fields = owner_client.get(url).context["adminform"].form.fields
    assert "task" not in fields and "number" not in fields
    form = {"task": sentiment_task.pk, "number": 9, "description": "moved?", "metadata": "{}"}
    assert owner_client.post(url, form).status_code == 302
    hate_round.refresh_from_db()
    assert (hate_round.task_id, hate_round.number, hate_round.description) == (hate_task.pk, 1, "moved?")
