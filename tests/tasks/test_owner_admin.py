"""A friendlier admin for task owners: the task config as a pretty-printed JSON editor with the schema's
messages (each with its JSON path) and syntax errors with their line and column; the owner picker that
searches (and what its endpoint answers, and to whom); the index and sidebar without the internals."""

from __future__ import annotations

import copy
import html
import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.html import escape

from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tests.factories.accounts import UserFactory
from tests.tasks.test_task_owned_admin import _task_form


@pytest.fixture
def owner_client(client, owner, password):
    client.login(username=owner.username, password=password)
    return client


def _change_url(task):
    return reverse("admin:tasks_task_change", args=[task.pk])


def test_config_is_pretty_printed_in_a_large_monospace_box(owner_client, hate_task, hate_round):
    page = owner_client.get(_change_url(hate_task)).text
    start = page.index('<textarea name="config"')
    box = page[start : page.index(">", start)]
    assert 'class="json-editor"' in box and 'rows="28"' in box and 'spellcheck="false"' in box
    hate_task.refresh_from_db()  # the keys in their stored order
    pretty = json.dumps(hate_task.config, indent=2, ensure_ascii=False)
    assert escape(pretty) in page
    assert '  "target_field": {\n    "name": "label",' in html.unescape(page)
    assert '<script src="/static/tasks/admin/json_editor.js"' in page
    assert "tasks/admin/json_editor.css" in page


def test_schema_problems_are_listed_with_their_paths(owner_client, hate_task, hate_round):
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    config["target_field"]["colour"] = "red"
    config["input_fields"][0]["max_length"] = 0
    config["perf_metric"] = "bleu"
    response = owner_client.post(_change_url(hate_task), _task_form(hate_task, hate_round, config))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["config"]
    assert sorted(errors) == [
        "config['input_fields'][0]['max_length']: 0 is less than the minimum of 1",
        "config['perf_metric']: 'bleu' is not one of ['accuracy', 'macro_f1', 'squad_f1', 'exact_match']",
        "config['target_field']: Additional properties are not allowed ('colour' was unexpected)",
    ]
    page = html.unescape(response.text)
    assert "<li>config['input_fields'][0]['max_length']: 0 is less than the minimum of 1</li>" in page
    assert '  "perf_metric": "bleu"' in page  # the posted config, pretty-printed again to fix it
    hate_task.refresh_from_db()
    assert hate_task.config["perf_metric"] == "accuracy" and "colour" not in hate_task.config["target_field"]


def test_a_syntax_error_says_where_and_keeps_the_text(owner_client, hate_task, hate_round):
    data = _task_form(hate_task, hate_round, HATE_SPEECH_CONFIG)
    data["config"] = '{\n  "input_fields": []\n  "perf_metric": "accuracy"\n}'
    response = owner_client.post(_change_url(hate_task), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["config"] == [
        "Not valid JSON: Expecting ',' delimiter at line 3, column 3."
    ]
    assert "  &quot;input_fields&quot;: []\n  &quot;perf_metric&quot;" in response.text


def test_a_lone_surrogate_is_a_form_error_the_text_kept_and_nothing_saved(
    owner_client, hate_task, hate_round
):
    """JSON may spell a lone surrogate; decoded, it is not text (found by a tester: the admin answered
    500). Every JSON field of the admin refuses it (core.form_fields.JSONTextField)."""
    data = _task_form(hate_task, hate_round, HATE_SPEECH_CONFIG)
    config = json.dumps({**HATE_SPEECH_CONFIG, "content_warning": "x"}, indent=2).replace('"x"', '"\\ud800"')
    data["config"] = config
    response = owner_client.post(_change_url(hate_task), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["config"] == [
        "'content_warning' holds a lone surrogate (a \\uD800-\\uDFFF escape that is not half of a pair), "
        "which is not text; nothing was saved."
    ]
    assert "&quot;content_warning&quot;: &quot;\\ud800&quot;" in response.text  # as typed
    hate_task.refresh_from_db()
    assert hate_task.config["content_warning"] == HATE_SPEECH_CONFIG["content_warning"]


def test_every_json_field_of_the_admin_refuses_a_lone_surrogate_and_shows_a_stored_one():
    from django.contrib import admin as django_admin
    from django.db import models

    from core.admin_extensions import ExtensibleAdmin
    from core.form_fields import JSONTextField

    json_admins = [
        model_admin
        for model, model_admin in django_admin.site._registry.items()
        if any(isinstance(f, models.JSONField) for f in model._meta.get_fields())
        and model._meta.app_label
        in {"tasks", "annotation", "validation", "crowd", "leaderboards", "models_registry"}
    ]
    assert json_admins and all(isinstance(a, ExtensibleAdmin) for a in json_admins)
    field = JSONTextField(required=False)
    with pytest.raises(ValidationError, match="'meta.note' holds a lone surrogate"):
        field.clean('{"meta": {"note": "\\ud800"}}')
    assert field.clean('{"note": "\\ud83d\\ude00"}') == {"note": "😀"}  # a pair is an emoji
    # A value stored with one (SQLite takes it) is shown escaped instead of failing the page.
    assert field.prepare_value({"x": "\ud800"}) == '{"x": "\\ud800"}'


# --- the owner picker --------------------------------------------------------------------------------


def _picker(client, term, field=("tasks", "task", "owners")):
    app_label, model_name, field_name = field
    return client.get(
        reverse("admin:autocomplete"),
        {"app_label": app_label, "model_name": model_name, "field_name": field_name, "term": term},
    )


@pytest.fixture
def accounts(db, password):
    """Staff "owen-staff" (owen@example.org), non-staff "owen-fan", superuser "root"."""
    UserFactory(username="owen-staff", email="owen@example.org", password=password, is_staff=True)
    UserFactory(username="owen-fan", email="fan@example.org", password=password)
    UserFactory(
        username="root", email="root@example.org", password=password, is_staff=True, is_superuser=True
    )


def test_task_page_has_a_search_box_not_every_account(owner_client, hate_task, hate_round, accounts):
    page = owner_client.get(_change_url(hate_task)).text
    start = page.index('<select name="owners"')
    select = page[start : page.index("</select>", start)]
    assert "admin-autocomplete" in select and "data-ajax--url" in select
    assert ">owner</option>" in select  # the current owner, selected
    assert "owen-fan" not in page and "owen-staff" not in page


def test_owner_searches_staff_by_username_and_gets_ids_and_usernames_only(
    owner_client, owner, hate_task, accounts
):
    response = _picker(owner_client, "ow")
    assert response.status_code == 200
    results = response.json()["results"]
    assert sorted(r["text"] for r in results) == ["owen-staff", "owner"]  # not owen-fan: not staff
    assert all(set(r) == {"id", "text"} for r in results)
    assert "@" not in response.text
    assert _picker(owner_client, "owen@example").json()["results"] == []  # no search by e-mail
    assert _picker(owner_client, "o").json()["results"] == []  # fewer than 2 characters
    assert _picker(owner_client, "").json()["results"] == []


def test_owner_gets_nothing_else_from_the_user_admin(owner_client, hate_task, accounts):
    assert _picker(owner_client, "ow", field=("tasks", "taskworker", "user")).status_code == 403
    assert owner_client.get(reverse("admin:accounts_user_changelist")).status_code == 403


def test_picker_is_refused_to_non_staff_and_to_staff_owning_nothing(client, password, hate_task, accounts):
    client.login(username="owen-fan", password=password)
    response = _picker(client, "ow")
    assert response.status_code == 302 and reverse("admin:login") in response["Location"]
    client.login(username="owen-staff", password=password)  # staff, owns no task
    assert _picker(client, "ow").status_code == 403


def test_superuser_searches_every_account_by_e_mail_too(client, password, hate_task, accounts):
    client.login(username="root", password=password)
    assert [r["text"] for r in _picker(client, "fan@example").json()["results"]] == ["owen-fan"]


# --- index and sidebar --------------------------------------------------------------------------------

INTERNALS = {"django_q", "auth", "authtoken", "account", "auditlog"}


def _apps(response) -> set[str]:
    return {app["app_label"] for app in response.context["available_apps"]}


def test_owner_sidebar_has_no_internals(owner_client, hate_task, hate_round):
    response = owner_client.get(reverse("admin:index"))
    apps = _apps(response)
    assert {"tasks", "annotation", "leaderboards"} <= apps
    assert not apps & INTERNALS
    assert "Django Q" not in response.text and "Groups" not in response.text
    sidebar = owner_client.get(reverse("admin:tasks_task_changelist"))
    assert not _apps(sidebar) & INTERNALS
    # the task's own audit log still opens from the task page
    assert owner_client.get(reverse("admin:auditlog_logentry_changelist")).status_code == 200


def test_staff_with_permissions_do_not_see_them_either_but_superusers_do(client, password, db):
    from django.contrib.auth.models import Permission

    staff = UserFactory(username="helper", password=password, is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_schedule", "view_group", "view_user"])
    )
    client.login(username="helper", password=password)
    apps = _apps(client.get(reverse("admin:index")))
    assert "accounts" in apps and not apps & INTERNALS
    assert client.get(reverse("admin:django_q_schedule_changelist")).status_code == 200  # hidden, not closed
    UserFactory(username="root", password=password, is_staff=True, is_superuser=True)
    client.login(username="root", password=password)
    assert INTERNALS <= _apps(client.get(reverse("admin:index")))


def test_without_javascript_owners_are_added_by_username(
    owner_client, owner, hate_task, hate_round, accounts
):
    url = _change_url(hate_task)
    refused = owner_client.post(url, {**_task_form(hate_task, hate_round, HATE_SPEECH_CONFIG),
                                      "add_owners": "owen-staff, owen-fan nobody"})  # fmt: skip
    assert refused.status_code == 200
    assert refused.context["adminform"].form.errors["add_owners"] == [
        "No active staff account has the username: nobody, owen-fan."
    ]
    assert list(hate_task.owners.values_list("username", flat=True)) == ["owner"]
    saved = owner_client.post(url, {**_task_form(hate_task, hate_round, HATE_SPEECH_CONFIG),
                                    "add_owners": " owen-staff,owen-staff "})  # fmt: skip
    assert saved.status_code == 302
    assert sorted(hate_task.owners.values_list("username", flat=True)) == ["owen-staff", "owner"]
