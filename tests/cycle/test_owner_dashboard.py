"""The task owner's dashboard (/tasks/<slug>/dashboard/): each round's figures counted by hand on a small
fixture, training and evaluation jobs with their progress, who may open it, the links to it from the
admin, and a fixed number of queries whatever the number of rounds."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from crowd.models import LedgerEntry
from cycle.dashboard.figures import task_dashboard
from cycle.models import TrainingJob
from leaderboards.models import Score
from tasks.services import ensure_round
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.crowd import enter_as, make_study
from tests.factories.leaderboards import DatasetFactory
from tests.factories.models_registry import RegisteredModelFactory, make_stand_in


@pytest.fixture
def owner_client(client, owner, password):
    client.login(username=owner.username, password=password)
    return client


@pytest.fixture
def small_round(hate_round, annotator):
    """Round 1 (current): 5 collected examples, 2 of them model-fooling (1 waiting for validation, 1
    verified), 3 not (2 pending, 1 flagged); a retracted and an imported one that count nowhere; 12.60
    GBP in the pay ledger."""
    make_example(hate_round, annotator, model_wrong=True)  # waiting for validation
    make_example(hate_round, annotator, model_wrong=True, status="validated_correct")
    make_example(hate_round, annotator, model_wrong=False, label="not-hateful")
    make_example(hate_round, annotator, model_wrong=False, label="not-hateful")
    make_example(hate_round, annotator, model_wrong=False, status="flagged")
    make_example(hate_round, annotator, model_wrong=True, is_retracted=True)
    make_example(hate_round, annotator, source="imported", status="validated_correct")
    study = make_study(hate_round)
    p = enter_as(study, "PID").participation
    for key, amount in (("example:1", "10.00"), ("reward:1", "3.10"), ("reversal:example:1", "-0.50")):
        LedgerEntry.objects.create(
            study=study, round=hate_round, participation=p, worker=p.user, kind=key.split(":")[0],
            event_key=key, amount=Decimal(amount), currency="GBP",
        )  # fmt: skip
    return hate_round


@pytest.fixture
def jobs(hate_task, owner):
    """A running training job and a failed one; a model with 2 scores done, 1 pending, 1 failed."""
    TrainingJob.objects.create(
        task=hate_task, rounds=[1], status="running", progress="epoch 2/3: loss 0.41", requested_by=owner
    )
    TrainingJob.objects.create(task=hate_task, rounds=[1, 2], status="failed", error_message="out of memory")
    model = RegisteredModelFactory(task=hate_task, name="minilm-quick-r1")
    Score.objects.filter(model=model).delete()
    for slug, status, perf in (("d1", "done", 0.7), ("d2", "done", 0.6), ("d3", "pending", None),
                               ("d4", "failed", None)):  # fmt: skip
        Score.objects.create(
            model=model, dataset=DatasetFactory(task=hate_task, slug=slug), status=status, perf=perf,
            error_message="CUDA error" if status == "failed" else "",
        )  # fmt: skip
    return model


def test_round_figures_by_hand(small_round, hate_task, rule_model):
    [row] = task_dashboard(hate_task).rounds
    assert (row.counts.collected, row.counts.fooling, row.mer_text) == (5, 2, "40.0%")
    assert (row.waiting, row.settled, row.counts.verified, row.vmer_text) == (1, 2, 1, "20.0%")
    assert row.is_current and row.targets == ["stand-in"]
    assert row.counts.cost.total == Decimal("12.60")


def test_page_shows_rounds_jobs_and_evaluations(owner_client, small_round, hate_task, rule_model, jobs):
    response = owner_client.get(reverse("cycle:dashboard", args=[hate_task.slug]))
    assert response.status_code == 200
    page = response.text
    row = page.split('<tr data-round="1">')[1].split("</tr>")[0]
    for cls, value in (("collected", "5"), ("fooling", "2"), ("mer", "40.0%"), ("settled", "2"),
                       ("verified", "1"), ("vmer", "20.0%")):  # fmt: skip
        assert f'<td class="num {cls}">{value}</td>' in row
    assert '<td class="num waiting"><strong>1</strong></td>' in row
    assert "12.60 GBP" in row and "12.60 per verified model-fooling" in row
    assert "1 example waiting for validation" in page
    assert "epoch 2/3: loss 0.41" in page and "out of memory" in page
    model_row = page.split(f'<tr data-model="{jobs.pk}">')[1].split("</tr>")[0]
    assert '<progress max="4" value="2"' in model_row and "2 / 4" in model_row
    assert '<td class="num failed"><strong class="error-text">1</strong></td>' in model_row
    assert "CUDA error" in page


def test_only_owners_and_superusers_open_it(client, owner, outsider, password, hate_task, hate_round):
    url = reverse("cycle:dashboard", args=[hate_task.slug])
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.login(username=outsider.username, password=password)
    assert client.get(url).status_code == 404  # as an unknown task: the page's existence leaks nothing
    staff = UserFactory(username="other-staff", password=password, is_staff=True)
    client.login(username=staff.username, password=password)
    assert client.get(url).status_code == 404
    assert client.get(reverse("cycle:dashboard", args=["no-such-task"])).status_code == 404
    UserFactory(username="root", password=password, is_staff=True, is_superuser=True)
    client.login(username="root", password=password)
    assert client.get(url).status_code == 200


def test_linked_from_the_task_admin_and_the_index(owner_client, hate_task, hate_round):
    change = owner_client.get(reverse("admin:tasks_task_change", args=[hate_task.pk])).text
    tool = reverse("admin:tasks_task_dashboard", args=[hate_task.pk])
    assert f'href="{tool}"' in change
    response = owner_client.get(tool)
    assert response.status_code == 302
    assert response["Location"] == reverse("cycle:dashboard", args=[hate_task.slug])
    index = owner_client.get(reverse("admin:index")).text
    assert 'id="task-dashboards"' in index
    assert f'href="{reverse("cycle:dashboard", args=[hate_task.slug])}"' in index


def test_a_non_owner_staff_user_gets_no_dashboard_link(client, password, hate_task, hate_round):
    UserFactory(username="other-staff", password=password, is_staff=True)
    client.login(username="other-staff", password=password)
    assert client.get(reverse("admin:tasks_task_dashboard", args=[hate_task.pk])).status_code == 404


def _more_rounds(task, annotator, upto: int) -> None:
    for number in range(2, upto + 1):
        round_ = ensure_round(task=task, number=number)
        make_stand_in(task, round_, name=f"stand-in-{number}")
        make_example(round_, annotator, model_wrong=True)
        make_example(round_, annotator, model_wrong=False, status="validated_correct")


def test_queries_do_not_grow_with_rounds(
    owner_client, small_round, hate_task, rule_model, jobs, annotator, django_assert_max_num_queries
):
    url = reverse("cycle:dashboard", args=[hate_task.slug])
    with django_assert_max_num_queries(16):
        assert owner_client.get(url).status_code == 200
    _more_rounds(hate_task, annotator, upto=5)
    TrainingJob.objects.create(task=hate_task, rounds=[1, 2, 3], status="queued")
    with django_assert_max_num_queries(16):
        response = owner_client.get(url)
    assert [r.round.number for r in response.context["dashboard"].rounds] == [1, 2, 3, 4, 5]
    assert response.context["dashboard"].rounds[4].settled == 1


def test_vmer_before_anything_is_settled_says_so(hate_round, annotator):
    make_example(hate_round, annotator)  # model-fooling, waiting
    (row,) = task_dashboard(hate_round.task).rounds
    assert (row.settled, row.vmer_text, row.mer_text) == (0, "none settled yet", "100.0%")
