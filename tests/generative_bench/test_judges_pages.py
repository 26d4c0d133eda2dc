"""The judges page, its API and admin: who sees what (the leaderboard's rule: anyone, for an active
red-teaming task), the figures as computed by hand in test_judges_agreement.py, and owners running a
judge."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Example
from generative_bench.judges.prompts import DEFAULT_TEMPLATE
from generative_bench.models import Judge
from tests.factories.accounts import UserFactory
from tests.generative_bench.judge_world import (
    URL,
    VC,
    agreement_world,
    chat_model,
    conversation,
    judge_of,
    red_team_task,
    verdict,
)
from tests.helpers.api import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(annotator, owner):
    world = agreement_world(annotator)
    world["task"].owners.add(owner)
    return world


def test_the_page_shows_agreement_and_rates_to_anyone(client, world):
    response = client.get("/tasks/red-team/judges/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<span dir="auto">Judge</span> <span class="badge">not trusted</span>' in html
    assert 'class="judge-panel untrusted"' in html
    assert "<strong>Not trusted:</strong> fewer than 20 outputs to compare." in html
    assert "Cohen's kappa <strong>0.40</strong>" in html
    assert "on 10 outputs people settled; 2 unreadable or failed verdicts left out." in html
    # Round 1: kappa 0.25 on 6 items; the judge says 5 of 8 conversations failed, people 4 of 10.
    assert '<th scope="row">1</th>\n      <td>6</td>\n      <td>0.25' in html
    assert '62% <span class="muted">(5 of 8 conversations)</span>' in html
    assert '40% <span class="muted">(4 of 10 conversations)</span>' in html
    assert '<th scope="col">Cohen\'s kappa (95% interval)</th>' in html
    # Per model: model A's replayed answers, 2 of 2 judged failed, 1 of 2 by people.
    assert '<span dir="auto">model-a</span>' in html and '50% <span class="muted">(1 of 2)</span>' in html


def test_the_page_names_models_as_the_leaderboard_does(client, world, outsider, owner):
    world["model_a"].is_anonymous = True
    world["model_a"].save()
    world["model_b"].is_published = False
    world["model_b"].save()
    client.force_login(outsider)
    html = client.get("/tasks/red-team/judges/").content.decode()
    assert "model-a" not in html and "Anonymous model 1" in html
    assert "model-b" not in html
    client.force_login(owner)
    html = client.get("/tasks/red-team/judges/").content.decode()
    assert "model-a" in html and "model-b" in html


def test_a_task_that_is_hidden_or_not_red_teaming_has_no_judges_page(client, world, owner, hate_task):
    retired = red_team_task("retired", active=False)
    judge_of(retired, chat_model(retired, "m", "http://127.0.0.1:9/v1"))
    retired.owners.add(owner)
    for user in (None, owner):
        if user:
            client.force_login(user)
        assert client.get("/tasks/retired/judges/").status_code == 404
        assert client.get("/tasks/hate-speech/judges/").status_code == 404
        assert client.get("/tasks/no-such-task/judges/").status_code == 404


def test_a_task_without_judges_says_so(client, owner):
    red_team_task()
    client.force_login(owner)
    html = client.get("/tasks/red-team/judges/").content.decode()
    assert "This task has no judges yet." in html


def one_person(rate: float, n: int, independent: list[float]) -> dict:
    """A rate's ``across_people`` when one person wrote every conversation: no interval (at least 5
    people are needed), the effective sample the whole n (no spread between people to shrink it), and
    Wilson's interval over the n conversations beside it."""
    return {
        "independent_interval": pytest.approx(independent, abs=2e-6),
        "rate": rate,
        "n": float(n),
        "interval": None,
        "people": 1,
        "effective_sample_size": float(n),
        "interval_method": None,
    }


def test_the_api_gives_the_pages_figures(world):
    response = client_for(None).get("/api/tasks/red-team/judges/")
    assert response.status_code == 200
    body = response.json()
    assert (body["task"], body["min_items"]) == ("red-team", 20)
    [judge] = body["judges"]
    assert (judge["name"], judge["model"], judge["trusted"], judge["agreement_floor"]) == (
        "Judge",
        "judge-model",
        False,
        0.4,
    )
    pooled = judge["agreement"]
    assert (pooled["n"], pooled["left_out"]) == (10, 2)
    assert pooled["kappa"] == pytest.approx(0.4) and pooled["raw"] == pytest.approx(0.7)
    assert pooled["kappa_interval"][0] <= 0.4 <= pooled["kappa_interval"][1]
    first, second = judge["rounds"]
    assert (first["round"], first["agreement"]["n"], first["judge"]) == (
        1,
        6,
        {
            "judged": 8,
            "failed": 5,
            "rate": 0.625,
            "across_people": one_person(0.625, 8, [0.305742, 0.863156]),
        },
    )
    assert first["people"] == {
        "attempts": 10,
        "verified": 4,
        "attack_success_rate": 0.4,
        "across_people": one_person(0.4, 10, [0.168180, 0.687326]),
    }
    assert (second["agreement"]["kappa"], second["judge"]["rate"]) == (pytest.approx(0.5), None)
    # Round 1: 6 outputs both judged, and the pending and the flagged conversation the judge said
    # not failed and failed: too few to correct, the raw rate given.
    assert first["corrected"]["refused"] == "fewer than 20 outputs judged by both people and the judge (6)"
    assert (first["corrected"]["observed"], first["corrected"]["outputs"]) == (0.5, 2)
    assert [(m["round"], m["model"], m["is_target"], m["failed"], m["judged"]) for m in judge["models"]] == [
        (1, "target", True, 5, 8),
        (2, "model-a", False, 2, 2),
        (2, "model-b", False, 1, 3),
    ]
    assert judge["models"][1]["people"] == {"judged": 2, "failed": 1, "rate": 0.5}


def test_the_api_has_no_judges_for_a_hidden_or_classifier_task(world, hate_task, owner):
    red_team_task("retired", active=False)
    for slug in ("retired", "hate-speech", "no-such-task"):
        assert client_for(owner).get(f"/api/tasks/{slug}/judges/").status_code == 404


def test_only_the_tasks_owners_run_a_judge(
    world, owner, outsider, annotator, django_capture_on_commit_callbacks
):
    url = f"/api/judges/{world['judge'].pk}/run/"
    assert client_for(None).post(url).status_code == 401
    assert client_for(outsider).post(url).status_code == 403
    assert client_for(annotator).post(url).status_code == 403
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        queued = client_for(owner).post(url)
        again = client_for(owner).post(url)  # a double click
    assert queued.status_code == 202 and queued.json() == {
        "id": world["judge"].pk,
        "status": "queued",
        "progress": "Queued.",
    }
    assert (
        again.status_code == 409
        and again.json()["detail"] == "This judge is already running; wait for it to finish."
    )
    assert len(callbacks) == 1
    superuser = UserFactory(username="root", is_staff=True, is_superuser=True)
    Judge.objects.filter(pk=world["judge"].pk).update(status="done")
    with django_capture_on_commit_callbacks(execute=False):
        assert client_for(superuser).post(url).status_code == 202
    for bad in ("999999", "abc", "-1", "1" * 40):
        assert client_for(owner).post(f"/api/judges/{bad}/run/").status_code == 404


def test_a_judge_of_a_hidden_task_answers_404(owner):
    retired = red_team_task("retired", active=False)
    retired.owners.add(owner)
    judge = judge_of(retired, chat_model(retired, "m", "http://127.0.0.1:9/v1"))
    assert client_for(owner).post(f"/api/judges/{judge.pk}/run/").status_code == 404


# --- the admin --------------------------------------------------------------------------------------------


def test_an_owner_adds_a_judge_in_the_admin_with_the_default_template(client, world, owner):
    client.force_login(owner)
    add = reverse("admin:generative_bench_judge_add")
    page = client.get(add)
    assert page.status_code == 200
    assert "You judge the answer of an AI assistant with a rubric." in page.content.decode()
    model = world["model_a"]
    form = {
        "task": world["task"].pk,
        "model": model.pk,
        "name": "Admin judge",
        "prompt_template": "Judge {output} by {rubric} and {passage}",
        "agreement_floor": "0.5",
        "is_active": "on",
    }
    refused = client.post(add, form)
    assert refused.status_code == 200
    assert "Unknown placeholder {passage} at character 32" in refused.content.decode()
    assert not Judge.objects.filter(name="Admin judge").exists()
    form["prompt_template"] = DEFAULT_TEMPLATE.replace("\n", "\r\n")
    assert client.post(add, form).status_code == 302
    judge = Judge.objects.get(name="Admin judge")
    assert (judge.model, judge.prompt_template, judge.agreement_floor) == (model, DEFAULT_TEMPLATE, 0.5)


def test_the_admin_refuses_a_model_of_a_task_the_owner_does_not_own(client, world, owner):
    elsewhere = red_team_task("elsewhere")
    foreign = chat_model(elsewhere, "foreign", "http://127.0.0.1:9/v1")
    client.force_login(owner)
    response = client.post(
        reverse("admin:generative_bench_judge_add"),
        {"task": world["task"].pk, "model": foreign.pk, "name": "X", "prompt_template": DEFAULT_TEMPLATE,
         "agreement_floor": "0.4"},
    )  # fmt: skip
    assert response.status_code == 200 and not Judge.objects.filter(name="X").exists()
    assert "Select a valid choice" in response.content.decode()


def test_the_run_action_queues_and_the_verdicts_are_read_only(
    client, world, owner, django_capture_on_commit_callbacks
):
    client.force_login(owner)
    changelist = reverse("admin:generative_bench_judge_changelist")
    page = client.get(changelist)
    # 9 readable verdicts in round 1 (6 settled, pending, flagged, retracted) and 5 in round 2.
    assert "14 read, 1 unreadable, 1 failed" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            changelist, {"action": "run_judge_action", "_selected_action": [world["judge"].pk]}, follow=True
        )
    assert "Queued: Judge." in response.content.decode() and len(callbacks) == 1
    assert Judge.objects.get(pk=world["judge"].pk).status == "queued"
    verdicts = client.get(reverse("admin:generative_bench_judgeverdict_changelist"))
    assert verdicts.status_code == 200
    assert client.get(reverse("admin:generative_bench_judgeverdict_add")).status_code == 403
    verdict = world["judge"].verdicts.first()
    detail = client.get(reverse("admin:generative_bench_judgeverdict_change", args=[verdict.pk]))
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()


def test_an_outsider_sees_no_judge_in_the_admin(client, world):
    staff = UserFactory(username="staff", is_staff=True)
    client.force_login(staff)
    assert client.get(reverse("admin:generative_bench_judge_changelist")).status_code == 403
    change = reverse("admin:generative_bench_judge_change", args=[world["judge"].pk])
    assert client.get(change).status_code in (302, 403, 404)


def test_the_task_page_links_to_the_judges_page(client, world, hate_task):
    assert 'href="/tasks/red-team/judges/">Judges</a>' in client.get("/tasks/red-team/").content.decode()
    assert "/judges/" not in client.get("/tasks/hate-speech/").content.decode()


# --- one label on both sides; a task that validates only claimed failures ---------------------------------


@pytest.fixture
def yes_judge(annotator):
    """A judge that said "failed" to 20 conversations claimed failed that people confirmed."""
    from annotation.models import Example
    from tests.generative_bench.judge_world import URL, conversation, verdict

    task = red_team_task()
    r1 = task.rounds.get(number=1)
    target = chat_model(task, "target", URL)
    judge = judge_of(task, chat_model(task, "judge-model", URL), floor=0.0)
    for _ in range(20):
        example = conversation(r1, annotator, target, failed=True, status=Example.Status.VALIDATED_CORRECT)
        verdict(judge, example, True)
    return judge


def test_kappa_with_one_label_on_both_sides_is_undefined_on_the_page_and_the_judge_not_trusted(
    client, yes_judge
):
    html = client.get("/tasks/red-team/judges/").content.decode()
    assert "Cohen's kappa <strong>undefined (one label on both sides)</strong>, raw agreement 100%" in html
    assert "1.00" not in html
    assert '<span dir="auto">Judge</span> <span class="badge">not trusted</span>' in html
    assert (
        "<strong>Not trusted:</strong> kappa is undefined: the judge and people gave every output the same "
        "label, so their agreement cannot be told from chance." in html
    )
    # Round 1's row says so too.
    assert (
        '<th scope="row">1</th>\n      <td>20</td>\n      <td>undefined (one label on both sides)</td>'
        in html
    )


def test_the_api_gives_null_kappa_with_its_reason(yes_judge):
    [judge] = client_for(None).get("/api/tasks/red-team/judges/").json()["judges"]
    assert judge["trusted"] is False
    pooled = judge["agreement"]
    assert (pooled["n"], pooled["kappa"], pooled["kappa_interval"], pooled["kappa_undefined"]) == (
        20,
        None,
        None,
        "one label on both sides",
    )
    assert (pooled["raw"], pooled["raw_interval"]) == (1.0, [1.0, 1.0])
    assert judge["rounds"][0]["agreement"]["kappa_undefined"] == "one label on both sides"


def test_a_task_that_validates_only_claimed_failures_says_the_comparison_holds_only_failures(client, world):
    # RED_TEAM_CONFIG leaves validate_non_fooling off: conversations claimed good are never validated.
    note = "The comparison holds only failures"
    html = client.get("/tasks/red-team/judges/").content.decode()
    assert note in html
    assert client_for(None).get("/api/tasks/red-team/judges/").json()["failures_only"] is True
    task = world["task"]
    task.config = {**task.config, "validate_non_fooling": True}
    task.save()
    assert note not in client.get("/tasks/red-team/judges/").content.decode()
    assert client_for(None).get("/api/tasks/red-team/judges/").json()["failures_only"] is False


def test_no_items_gives_no_reason_to_read_as_one_label(annotator):
    task = red_team_task()
    judge_of(task, chat_model(task, "judge-model", "http://127.0.0.1:9/v1"))
    [judge] = client_for(None).get("/api/tasks/red-team/judges/").json()["judges"]
    assert (judge["agreement"]["n"], judge["agreement"]["kappa"], judge["agreement"]["kappa_undefined"]) == (
        0,
        None,
        "no items",
    )


def test_the_generative_leaderboard_says_the_kappa_is_undefined(client, yes_judge):
    html = client.get("/tasks/red-team/leaderboard/generative/").content.decode()
    assert (
        "Judge: Cohen's kappa undefined (one label on both sides) on 20 items settled by people; floor "
        "0.00: not trusted." in html
    )


def test_the_judges_rate_is_corrected_for_its_errors(annotator, owner, client):
    """24 conversations both judged: (people, judge) failed (T, T) 8, (T, F) 2, (F, T) 2, (F, F) 12, so
    Se = 8/10 = 0.8 and Sp = 12/14 = 6/7; 10 pending conversations, 4 of them judged failed: p = 0.4.
    Rogan-Gladen: (0.4 + 6/7 - 1) / (0.8 + 6/7 - 1) = (1.8/7) / (4.6/7) = 9/23 = 0.3913."""
    task = red_team_task()
    r1 = task.rounds.get(number=1)
    target = chat_model(task, "target", URL)
    judge = judge_of(task, chat_model(task, "judge-model", URL))
    for people, judged, count in ((True, True, 8), (True, False, 2), (False, True, 2), (False, False, 12)):
        for _ in range(count):
            verdict(judge, conversation(r1, annotator, target, failed=people, status=VC), judged)
    for k in range(10):
        verdict(judge, conversation(r1, annotator, target, failed=True, status=Example.Status.PENDING), k < 4)
    task.owners.add(owner)
    [round_1] = client_for(None).get("/api/tasks/red-team/judges/").json()["judges"][0]["rounds"]
    corrected = round_1["corrected"]
    assert corrected["refused"] is None
    assert corrected["corrected"] == pytest.approx(9 / 23)
    assert (corrected["observed"], corrected["outputs"]) == (0.4, 10)
    errors = corrected["errors"]
    assert (errors["n"], errors["sensitivity"], errors["specificity"]) == (24, 0.8, pytest.approx(6 / 7))
    assert (errors["failed_by_people"], errors["not_failed_by_people"]) == (10, 14)
    low, high = corrected["interval"]
    assert 0 <= low < 9 / 23 < high <= 1
    client.force_login(owner)
    html = client.get("/tasks/red-team/judges/").content.decode()
    assert "<strong>39%</strong>" in html and "the judge said 40% of 10" in html
    assert "sensitivity 80%" in html and "specificity 86%" in html
    # By kind: the 10 failures people settled are all tagged 'fabrication' (judge_world), 8 caught; Wilson
    # (8, 10): centre (0.8 + 0.19208) / 1.38415 = 0.71674, half 1.41600 * sqrt(0.016 + 0.0096040) =
    # 0.22658 -> [0.4902, 0.9433]. No conversation of the other kinds.
    by_kind = {k["kind"]: k for k in round_1["sensitivity_by_kind"]}
    assert list(by_kind) == ["contradiction", "fabrication", "unanswerable", "other"]
    fabrication = by_kind["fabrication"]
    assert (fabrication["caught"], fabrication["n"], fabrication["sensitivity"]) == (8, 10, 0.8)
    assert fabrication["interval"] == [pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4)]
    assert by_kind["contradiction"] == {
        "kind": "contradiction",
        "caught": 0,
        "n": 0,
        "sensitivity": None,
        "interval": None,
    }
    assert "fabrication</span> 80%" in html and "(8 of 10;" in html
