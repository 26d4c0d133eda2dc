"""The audit log (core/audit.py): one entry per owner action, with its actor, before/after and task;
owners read their own tasks' entries in the admin."""

from __future__ import annotations

import copy
import json

import pytest
from auditlog.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Example
from core import audit
from models_registry.models import RegisteredModel
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Round, Task, TaskWorker
from tasks.qualification import hold_for_review, mark_tutorial_seen, release_hold, set_listing
from tasks.services import close_round
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.models_registry import RegisteredModelFactory
from tests.factories.tasks import TaskFactory, open_round
from tests.factories.validation import serve, submit_served
from validation.models import Validation
from validation.services import submit_validation


def entries_for(model) -> list[LogEntry]:
    return list(LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(model)).order_by("pk"))


@pytest.fixture
def owner_client(client, owner, password):
    assert client.login(username=owner.username, password=password)
    return client


@pytest.fixture(autouse=True)
def releases_dir(settings, tmp_path):
    settings.DYNABENCH_RELEASES_DIR = tmp_path / "releases"


def _change_form_data(client, url) -> dict:
    """The POST body of an admin change page as it is shown (its form and every inline), so the test
    keeps working when an app adds an inline to the Task page."""
    page = client.get(url)
    forms = [page.context["adminform"].form]
    data = {}
    for inline in page.context["inline_admin_formsets"]:
        formset = inline.formset
        for key, value in formset.management_form.initial.items():
            data[f"{formset.prefix}-{key}"] = value
        forms += formset.forms
    for form in forms:
        for name, field in form.fields.items():
            value = field.prepare_value(form[name].value())
            if isinstance(value, bool):
                if value:
                    data[form.add_prefix(name)] = "on"
            elif value is not None:
                data[form.add_prefix(name)] = value
    return data


def test_a_task_config_change_in_the_admin_is_one_entry_by_the_owner(
    owner_client, owner, hate_task, hate_round
):
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    config["licence"] = "CC BY-NC 4.0"
    url = reverse("admin:tasks_task_change", args=[hate_task.pk])
    body = {**_change_form_data(owner_client, url), "config": json.dumps(config)}
    LogEntry.objects.all().delete()  # the fixtures' (the task's creation, its owner)
    response = owner_client.post(url, body)
    assert response.status_code == 302, response.context["errors"]
    entries = entries_for(Task)
    assert [(e.action, list(e.changes)) for e in entries] == [(LogEntry.Action.UPDATE, ["config"])]
    [entry] = entries
    assert entry.action == LogEntry.Action.UPDATE
    assert entry.actor == owner
    assert entry.additional_data["task_id"] == hate_task.pk
    assert list(entry.changes) == ["config"]
    before, after = entry.changes["config"]
    assert before["licence"] == "CC BY 4.0 (HatemojiBuild, HateCheck, HatemojiCheck)"
    assert after == config


def test_closing_a_round_through_the_service_names_the_actor(hate_task, hate_round, owner):
    with audit.acting_as(owner):
        close_round(round_=hate_round)
    [entry] = [e for e in entries_for(Round) if e.action == LogEntry.Action.UPDATE]
    assert entry.actor == owner
    assert entry.additional_data["task_id"] == hate_task.pk
    assert entry.changes["is_closed"] == [False, True]
    assert entry.changes["closed_at"][0] is None and entry.changes["closed_at"][1]


def test_closing_rounds_in_the_admin_is_logged_with_the_session_user(owner_client, owner, hate_round):
    response = owner_client.post(
        reverse("admin:tasks_round_changelist"),
        {"action": "close_rounds", "_selected_action": [hate_round.pk]},
    )
    assert response.status_code == 302
    [entry] = [e for e in entries_for(Round) if e.action == LogEntry.Action.UPDATE]
    assert (entry.actor, entry.changes["is_closed"]) == (owner, [False, True])


def test_an_owner_verdict_through_the_api_is_logged_with_the_tokens_user(
    hate_task, hate_round, owner, annotator, validator, api
):
    ordinary = make_example(hate_round, annotator)
    serve(ordinary, validator)  # a vote counts only on an example served to its validator
    assert (
        api(validator)
        .post(f"/api/examples/{ordinary.pk}/validations/", {"verdict": "correct"}, format="json")
        .status_code
        == 201
    )
    assert entries_for(Validation) == [] and entries_for(Example) == []  # an ordinary vote is not logged

    example = make_example(hate_round, annotator)
    response = api(owner).post(
        f"/api/examples/{example.pk}/validations/",
        {"verdict": "incorrect", "owner_mode": True, "corrected_label": "not-hateful"},
        format="json",
    )
    assert response.status_code == 201, response.content
    [verdict] = entries_for(Validation)
    assert verdict.action == LogEntry.Action.CREATE
    assert verdict.actor == owner  # the token's user, authenticated inside the view
    assert verdict.additional_data["task_id"] == hate_task.pk
    assert verdict.changes["verdict"] == [None, "incorrect"]
    assert verdict.changes["is_owner_verdict"] == [None, True]
    [status] = entries_for(Example)
    assert (status.actor, status.object_id) == (owner, example.pk)
    assert status.changes == {"status": ["pending", "validated_incorrect"]}
    assert status.additional_data["task_id"] == hate_task.pk


def test_an_owner_verdict_through_the_service_is_logged_but_quorum_is_not(
    hate_task, hate_round, owner, annotator
):
    hate_task.validation_quorum = 1
    hate_task.save(update_fields=["validation_quorum"])
    LogEntry.objects.all().delete()
    by_quorum = make_example(hate_round, annotator)
    submit_served(example=by_quorum, validator=UserFactory(), verdict="correct")
    assert entries_for(Example) == [] and entries_for(Validation) == []
    example = make_example(hate_round, annotator)
    with audit.acting_as(owner):
        submit_validation(example=example, validator=owner, verdict="flagged", owner_mode=True)
    assert [e.changes for e in entries_for(Example)] == [{"status": ["pending", "flagged"]}]
    assert len(entries_for(Validation)) == 1


def test_publishing_a_model_in_the_admin_is_one_entry(owner_client, owner, hate_task):
    model = RegisteredModelFactory(task=hate_task, name="to-publish", is_published=False)
    LogEntry.objects.all().delete()
    response = owner_client.post(
        reverse("admin:models_registry_registeredmodel_changelist"),
        {"action": "publish", "_selected_action": [model.pk]},
    )
    assert response.status_code == 302
    [entry] = entries_for(RegisteredModel)
    assert (entry.actor, entry.object_id, entry.changes) == (owner, model.pk, {"is_published": [False, True]})
    assert entry.additional_data["task_id"] == hate_task.pk
    model.refresh_from_db()
    assert model.is_published


def test_blocking_a_worker_is_logged_and_onboarding_is_not(hate_task, owner, annotator):
    mark_tutorial_seen(task=hate_task, user=annotator)
    assert entries_for(TaskWorker) == []
    with audit.acting_as(owner):
        set_listing(task=hate_task, user=annotator, listing="blocked", reason="spam")
    [entry] = entries_for(TaskWorker)
    assert entry.actor == owner
    assert entry.changes == {"listing": ["", "blocked"], "listing_reason": ["", "spam"]}
    assert entry.additional_data["task_id"] == hate_task.pk


def test_blocking_a_user_in_the_admin_is_logged_without_a_task(admin_client, annotator):
    from accounts.models import User

    admin = User.objects.get(username="admin")
    assert entries_for(User) == []  # sign-ups are not logged
    annotator.is_blocked = True
    with audit.acting_as(admin):
        annotator.save()
    [entry] = entries_for(User)
    assert (entry.actor, entry.changes, entry.additional_data["task_id"]) == (
        admin,
        {"is_blocked": [False, True]},
        None,
    )


def test_a_command_records_its_actor_and_operator(hate_task, hate_round, owner, annotator, monkeypatch):
    make_example(hate_round, annotator, status="validated_correct")
    call_command("release_round", "hate-speech", "1", actor="owner")
    [entry] = [
        e for e in LogEntry.objects.filter(action=LogEntry.Action.CREATE) if e.content_type.model == "release"
    ]
    assert entry.actor == owner
    assert entry.additional_data["task_id"] == hate_task.pk
    assert entry.additional_data["operator"]["command"] == "release_round"
    assert entry.additional_data["operator"]["username"] == "owner"
    assert entry.additional_data["operator"]["os_user"] == audit.operator_os_user()
    assert entry.changes["version"] == [None, 1]


def test_a_command_without_actor_records_the_os_user_and_the_operator_variable_names_one(
    hate_task, hate_round, owner, annotator, monkeypatch
):
    monkeypatch.delenv(audit.OPERATOR_ENV, raising=False)
    with audit.operator(None, command="load_contexts"):
        close_round(round_=hate_round)
    [entry] = [e for e in entries_for(Round) if e.action == LogEntry.Action.UPDATE]
    assert entry.actor is None
    assert entry.additional_data["operator"] == {
        "command": "load_contexts",
        "os_user": audit.operator_os_user(),
        "username": "",
    }

    monkeypatch.setenv(audit.OPERATOR_ENV, "owner")
    with audit.operator(None, command="x") as user:
        assert user == owner
    monkeypatch.setenv(audit.OPERATOR_ENV, "nobody-here")
    with pytest.raises(CommandError, match="nobody-here"):
        call_command("release_round", "hate-speech", "1")


def test_owners_read_only_their_tasks_entries(owner_client, owner, hate_task, hate_round, admin_client):
    other = TaskFactory(slug="other-task")
    other_round = open_round(other)
    with audit.acting_as(owner):
        close_round(round_=hate_round)
        close_round(round_=other_round)
    url = reverse("admin:auditlog_logentry_changelist")
    response = owner_client.get(url)
    assert response.status_code == 200
    seen = {e.additional_data.get("task_id") for e in response.context["cl"].result_list}
    assert seen == {hate_task.pk}
    theirs = LogEntry.objects.filter(additional_data__task_id=other.pk).first()
    assert owner_client.get(reverse("admin:auditlog_logentry_change", args=[theirs.pk])).status_code == 302
    everything = admin_client.get(url).context["cl"].result_list
    assert {e.additional_data.get("task_id") for e in everything} >= {hate_task.pk, other.pk}
    # read-only, for owners and superusers alike
    assert admin_client.get(reverse("admin:auditlog_logentry_add")).status_code == 403
    mine = LogEntry.objects.filter(additional_data__task_id=hate_task.pk).first()
    assert (
        owner_client.post(
            reverse("admin:auditlog_logentry_delete", args=[mine.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert LogEntry.objects.filter(pk=mine.pk).exists()


def test_the_task_page_links_to_its_audit_log(owner_client, hate_task, hate_round, owner):
    page = owner_client.get(reverse("admin:tasks_task_change", args=[hate_task.pk]))
    link = reverse("admin:tasks_task_audit_log", args=[hate_task.pk])
    assert link in page.text
    response = owner_client.get(link)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:auditlog_logentry_changelist')}?task={hate_task.pk}"
    other = TaskFactory(slug="not-mine")
    assert owner_client.get(reverse("admin:tasks_task_audit_log", args=[other.pk])).status_code == 404
    filtered = owner_client.get(response["Location"])
    assert filtered.status_code == 200


def test_adding_a_task_owner_is_logged_with_the_task(hate_task, owner):
    newcomer = UserFactory(username="co-owner")
    LogEntry.objects.all().delete()
    with audit.acting_as(owner):
        hate_task.owners.add(newcomer)
    [entry] = entries_for(Task)
    assert entry.actor == owner
    assert entry.changes == {"owners": {"type": "m2m", "operation": "add", "objects": ["co-owner"]}}
    assert entry.additional_data["task_id"] == hate_task.pk


def test_a_hold_and_its_release_are_logged(hate_task, owner, validator):
    hold_for_review(task=hate_task, user=validator, reason="gold accuracy 40%")  # automatic: no actor
    assert hold_for_review(task=hate_task, user=validator, reason="again") is False
    with audit.acting_as(owner):
        release_hold(task=hate_task, user=validator)
    held, released = entries_for(TaskWorker)
    assert held.actor is None and released.actor == owner
    assert held.changes["held_at"][0] is None and held.changes["held_reason"] == ["", "gold accuracy 40%"]
    assert released.changes["held_at"] == [held.changes["held_at"][1], None]
    assert released.changes["held_reason"] == ["gold accuracy 40%", ""]
    assert {held.additional_data["task_id"], released.additional_data["task_id"]} == {hate_task.pk}


def test_the_client_address_behind_a_trusted_proxy(rf, settings):
    request = rf.get("/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7", REMOTE_ADDR="10.0.0.1")
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 0
    assert audit.AuditMiddleware._get_remote_addr(request) == "10.0.0.1"  # the header could be forged
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    assert audit.AuditMiddleware._get_remote_addr(request) == "203.0.113.7"


def test_study_settings_and_payment_batches_are_logged_without_their_secrets(hate_task, hate_round, owner):
    from crowd.models import PaymentBatch, Study

    with audit.acting_as(owner):
        study = Study.objects.create(
            round=hate_round, name="Pilot", platform="prolific", examples_required=1, max_participants=5,
            completion_code="CODE0", consent_text="I agree.",
        )  # fmt: skip
        study.max_participants = 10
        study.save()
        PaymentBatch.objects.create(
            study=study, created_by=owner, content="worker,amount\n", n_workers=1, n_entries=2
        )
    created, changed = entries_for(Study)
    assert "entry_key" not in created.changes and created.additional_data["task_id"] == hate_task.pk
    assert (changed.actor, changed.changes) == (owner, {"max_participants": [5, 10]})
    [batch] = entries_for(PaymentBatch)
    assert "content" not in batch.changes and batch.changes["n_entries"] == [None, 2]
    assert batch.additional_data["task_id"] == hate_task.pk
