"""The qualification admin for task owners: the tutorial inline and the cap fields on the task page, the
quiz with its questions (checked by ``QuizQuestion.clean``) and read-only attempts, the workers'
changelist scoped to the owner's tasks with its actions, a new standing named by username."""

from __future__ import annotations

import copy
import json

import pytest
from auditlog.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.contrib.messages import get_messages
from django.core.exceptions import ValidationError
from django.urls import reverse

from tasks import qualification
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Quiz, Task, TaskWorker
from tests.factories.accounts import UserFactory
from tests.factories.qualification import answers, make_quiz, standing

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner_client(client, owner, password):
    assert client.login(username=owner.username, password=password)
    return client


@pytest.fixture
def other_task(db):
    return Task.objects.create(slug="other", name="Other task", config=copy.deepcopy(HATE_SPEECH_CONFIG))


def _management(prefix: str, total: int = 0, initial: int = 0) -> dict:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def test_task_page_has_the_tutorial_inline_and_the_cap_fields(owner_client, hate_task, hate_round):
    url = reverse("admin:tasks_task_change", args=[hate_task.pk])
    text = owner_client.get(url).text
    for name in (
        "daily_example_cap",
        "daily_validation_cap",
        "requires_allow_list",
        "gold_share",
        "gold_accuracy_threshold",
        "gold_min_answers",
        "tutorial_items-TOTAL_FORMS",
    ):
        assert f'name="{name}"' in text
    data = {
        "name": hate_task.name,
        "slug": hate_task.slug,
        "config": json.dumps(HATE_SPEECH_CONFIG),
        "instructions": "x",
        "owners": [u.pk for u in hate_task.owners.all()],
        "current_round": hate_round.pk,
        "validation_quorum": 3,
        "is_active": "on",
        "daily_example_cap": "20",
        "requires_allow_list": "on",
        "gold_share": "0.1",
        "gold_accuracy_threshold": "0.8",
        "gold_min_answers": "5",
        **_management("rounds", 1, 1),
        "rounds-0-id": hate_round.pk,
        "rounds-0-task": hate_task.pk,
        **_management("tutorial_items", 1),
        "tutorial_items-0-position": "0",
        "tutorial_items-0-text": "Go back where you c0me from",
        "tutorial_items-0-label": "hateful",
        "tutorial_items-0-model_answer": "not-hateful",
        "tutorial_items-0-fooled_model": "on",
        "tutorial_items-0-note": "Digits for letters.",
    }
    response = owner_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].errors if response.context else ""
    hate_task.refresh_from_db()
    assert (hate_task.daily_example_cap, hate_task.daily_validation_cap, hate_task.requires_allow_list) == (
        20,
        None,
        True,
    )
    assert (hate_task.gold_share, hate_task.gold_accuracy_threshold, hate_task.gold_min_answers) == (
        0.1,
        0.8,
        5,
    )
    item = hate_task.tutorial_items.get()
    assert (item.text, item.fooled_model, item.note) == (
        "Go back where you c0me from",
        True,
        "Digits for letters.",
    )


def _quiz_form(task, answer: str) -> dict:
    return {
        "task": task.pk,
        "is_active": "on",
        "introduction": "",
        "pass_mark": "0.75",
        "max_attempts": "",
        **_management("questions", 1),
        "questions-0-position": "0",
        "questions-0-text": "Is 'I love you' hateful?",
        "questions-0-choices": json.dumps(["yes", "no"]),
        "questions-0-answer": answer,
        "questions-0-explanation": "Love is not hate.",
        **_management("attempts"),
    }


def test_owner_adds_a_quiz_and_a_wrong_answer_is_refused(owner_client, hate_task, other_task):
    url = reverse("admin:tasks_quiz_add")
    response = owner_client.post(url, _quiz_form(hate_task, "maybe"))
    assert response.status_code == 200
    assert "The answer must be one of the choices, exactly." in response.text
    assert not Quiz.objects.exists()
    response = owner_client.post(url, _quiz_form(other_task, "no"))
    assert response.status_code == 200 and not Quiz.objects.exists()  # not their task
    response = owner_client.post(url, _quiz_form(hate_task, "no"))
    assert response.status_code == 302
    question = hate_task.quiz.questions.get()
    assert (question.choices, question.answer) == (["yes", "no"], "no")


def test_quiz_page_shows_attempts_read_only(owner_client, hate_task, annotator):
    quiz = make_quiz(hate_task, n_questions=4)
    qualification.submit_quiz(task=hate_task, user=annotator, answers=answers(quiz, 3))
    text = owner_client.get(reverse("admin:tasks_quiz_change", args=[quiz.pk])).text
    assert "attempts-TOTAL_FORMS" in text
    assert 'name="attempts-0-n_correct"' not in text  # read-only: shown, not editable
    assert "annotator" in text


def test_workers_changelist_is_scoped_and_its_actions_work(
    owner_client, hate_task, other_task, annotator, validator
):
    mine = standing(hate_task, annotator)
    qualification.hold_for_review(task=hate_task, user=validator, reason="gold")
    theirs = standing(other_task, annotator)
    url = reverse("admin:tasks_taskworker_changelist")
    shown = {w.pk for w in owner_client.get(url).context["cl"].result_list}
    assert shown == {mine.pk, hate_task.workers.get(user=validator).pk}

    ids = [mine.pk, theirs.pk]  # theirs is not in the owner's queryset: untouched
    owner_client.post(url, {"action": "block", "_selected_action": ids})
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.listing, mine.listing_reason) == ("blocked", "Blocked by owner in the admin.")
    assert theirs.listing == ""
    owner_client.post(url, {"action": "allow", "_selected_action": [mine.pk]})
    mine.refresh_from_db()
    assert mine.listing == "allowed"
    owner_client.post(url, {"action": "remove_from_lists", "_selected_action": [mine.pk]})
    mine.refresh_from_db()
    assert (mine.listing, mine.listing_reason) == ("", "")
    held = hate_task.workers.get(user=validator)
    owner_client.post(url, {"action": "release_hold", "_selected_action": [held.pk]})
    held.refresh_from_db()
    assert (held.held_at, held.held_reason) == (None, "")


def test_owner_adds_a_standing_by_username(owner_client, hate_task, other_task, annotator):
    url = reverse("admin:tasks_taskworker_add")
    page = owner_client.get(url)
    assert 'name="username"' in page.text and 'name="user"' not in page.text  # no list of every account
    form = {"task": hate_task.pk, "listing": "allowed", "listing_reason": "", "held_reason": ""}
    response = owner_client.post(url, {**form, "username": "nobody"})
    assert "No account has this username." in response.text
    response = owner_client.post(url, {**form, "username": "annotator"})
    assert response.status_code == 302
    assert TaskWorker.objects.get(task=hate_task, user=annotator).listing == "allowed"
    response = owner_client.post(url, {**form, "username": "annotator"})
    assert "annotator already has a standing on hate-speech; change that one." in response.text
    response = owner_client.post(url, {**form, "task": other_task.pk, "username": "annotator"})
    assert response.status_code == 200 and not other_task.workers.exists()


PASS_MARK_ERROR = "A share of the questions, more than 0 and at most 1 (e.g. 0.75)."


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"max_attempts": "0"}, "max_attempts", "At least one attempt; leave empty for no limit."),
        ({"pass_mark": "0"}, "pass_mark", PASS_MARK_ERROR),
        ({"pass_mark": "1.5"}, "pass_mark", PASS_MARK_ERROR),
        ({"pass_mark": "-0.25"}, "pass_mark", PASS_MARK_ERROR),
    ],
)
def test_an_unpassable_quiz_is_refused_under_its_field(owner_client, hate_task, change, field, message):
    response = owner_client.post(reverse("admin:tasks_quiz_add"), {**_quiz_form(hate_task, "no"), **change})
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors == {field: [message]}  # under the field, not "Constraint ... is violated." on top
    assert "is violated" not in response.text
    assert not Quiz.objects.exists()


def test_the_limits_of_a_quiz_are_accepted(owner_client, hate_task):
    form = {**_quiz_form(hate_task, "no"), "pass_mark": "1", "max_attempts": "1"}
    assert owner_client.post(reverse("admin:tasks_quiz_add"), form).status_code == 302
    assert (hate_task.quiz.pass_mark, hate_task.quiz.max_attempts) == (1.0, 1)


@pytest.mark.parametrize("choices", [["a", "a"], ["yes", "no", "yes "]])
def test_a_question_with_the_same_choice_twice_is_refused(owner_client, hate_task, choices):
    form = {**_quiz_form(hate_task, "a"), "questions-0-choices": json.dumps(choices)}
    response = owner_client.post(reverse("admin:tasks_quiz_add"), form)
    assert response.status_code == 200
    [questions] = [f for f in response.context["inline_admin_formsets"] if f.formset.prefix == "questions"]
    assert questions.formset.forms[0].errors == {"choices": ["Each choice must be different."]}
    assert not Quiz.objects.exists()


GOLD_SHARE_ERROR = "A share of the validation queue, at least 0 and less than 1 (e.g. 0.1); 0 for no gold."


@pytest.mark.parametrize("gold_share", [-0.1, 1.0, 1.5])
def test_task_gold_share_outside_zero_to_one_is_a_field_error(hate_task, gold_share):
    hate_task.gold_share = gold_share
    with pytest.raises(ValidationError) as caught:
        hate_task.full_clean()
    assert caught.value.message_dict == {"gold_share": [GOLD_SHARE_ERROR]}  # not "Constraint ... violated."


@pytest.mark.parametrize("gold_share", [0.0, 0.99])
def test_task_gold_share_in_range_is_accepted(hate_task, gold_share):
    hate_task.gold_share = gold_share
    hate_task.full_clean()


def test_a_pass_mark_that_is_not_a_number_gets_only_the_type_error(hate_task):
    quiz = Quiz(task=hate_task, pass_mark="abc")
    with pytest.raises(ValidationError) as caught:
        quiz.full_clean()
    assert caught.value.message_dict == {"pass_mark": ["“abc” value must be a float."]}


def test_an_owner_makes_a_round_a_competition_in_the_admin_and_it_needs_the_quota(
    client, owner, password, hate_round
):
    """The round's competition fields are on its admin page; a competition without a quota is refused there."""
    from django.urls import reverse

    client.login(username=owner.username, password=password)
    url = reverse("admin:tasks_round_change", args=[hate_round.pk])
    form = {
        "task": hate_round.task_id,
        "number": hate_round.number,
        "description": "",
        "metadata": "{}",
        "is_competition": "on",
        "examples_per_participant": "",
    }
    refused = client.post(url, form)
    assert refused.status_code == 200
    assert "A competition round needs the number of examples each participant writes." in refused.text
    assert client.post(url, {**form, "examples_per_participant": "20"}).status_code == 302
    hate_round.refresh_from_db()
    assert (hate_round.is_competition, hate_round.examples_per_participant) == (True, 20)


# --- the workers' actions go through the qualification services, so the audit log records them -----------


def _entries_of(workers) -> dict[int, LogEntry]:
    """The audit log's entries of ``workers``, by worker id (at most one each, else the test fails)."""
    entries = LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(TaskWorker), object_id__in=[w.pk for w in workers]
    )
    by_worker = {}
    for entry in entries:
        assert entry.object_id not in by_worker, f"two entries for worker {entry.object_id}"
        by_worker[entry.object_id] = entry
    return by_worker


def _run_action(client, action: str, workers) -> list[str]:
    """POST ``action`` on ``workers`` to the workers' changelist; the messages it left for the user."""
    response = client.post(
        reverse("admin:tasks_taskworker_changelist"),
        {"action": action, "_selected_action": [w.pk for w in workers]},
    )
    assert response.status_code == 302
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def superuser_client(client, password, db):
    root = UserFactory(username="root", password=password, is_staff=True, is_superuser=True)
    assert client.login(username=root.username, password=password)
    client.user = root
    return client


@pytest.fixture(params=["owner", "superuser"])
def acting_client(request, owner, hate_task, other_task):
    """A client logged in as the hate-speech task's owner, or as a superuser; ``.user`` is who."""
    if request.param == "owner":
        client = request.getfixturevalue("owner_client")
        client.user = owner
        return client
    return request.getfixturevalue("superuser_client")


@pytest.mark.parametrize(
    ("action", "listing", "done", "before"),
    [
        ("block", "blocked", "blocked", [("", ""), ("allowed", "trusted")]),
        ("allow", "allowed", "allowed", [("", ""), ("blocked", "spam")]),
        ("remove_from_lists", "", "removed from the lists", [("blocked", "spam"), ("allowed", "trusted")]),
    ],
)
def test_a_listing_action_changes_each_row_and_logs_it_with_the_actor(
    acting_client, hate_task, other_task, annotator, validator, outsider, action, listing, done, before
):
    actor = acting_client.user
    (listing_a, reason_a), (listing_v, reason_v) = before
    mine = [
        standing(hate_task, annotator, listing=listing_a, listing_reason=reason_a),
        standing(hate_task, validator, listing=listing_v, listing_reason=reason_v),
    ]
    theirs = standing(other_task, outsider, listing=listing_a, listing_reason=reason_a)
    selected = [*mine, theirs]
    # The owner's changelist holds only their task's rows: the other task's row is not theirs to change.
    changed = selected if actor.is_superuser else mine
    LogEntry.objects.all().delete()  # the fixtures' (the rows' creation)

    assert _run_action(acting_client, action, selected) == [f"{len(changed)} worker(s) {done}."]

    reason = f"{done.capitalize()} by {actor.username} in the admin." if listing else ""
    entries = _entries_of(selected)
    assert set(entries) == {w.pk for w in changed}
    for worker in selected:
        old = (worker.listing, worker.listing_reason)
        worker.refresh_from_db()
        if worker not in changed:
            assert (worker.listing, worker.listing_reason) == old
            continue
        assert (worker.listing, worker.listing_reason) == (listing, reason)
        entry = entries[worker.pk]
        assert (entry.action, entry.actor, entry.remote_addr) == (LogEntry.Action.UPDATE, actor, "127.0.0.1")
        assert entry.changes == {"listing": [old[0], listing], "listing_reason": [old[1], reason]}
        assert entry.additional_data["task_id"] == worker.task_id


def test_releasing_holds_changes_the_held_rows_and_logs_each_with_the_actor(
    acting_client, hate_task, other_task, annotator, validator, outsider
):
    actor = acting_client.user
    qualification.hold_for_review(task=hate_task, user=annotator, reason="gold accuracy 0.4")
    qualification.hold_for_review(task=other_task, user=validator, reason="gold accuracy 0.5")
    not_held = standing(hate_task, outsider, listing="allowed")
    held = [hate_task.workers.get(user=annotator), other_task.workers.get(user=validator)]
    # The owner's changelist holds only their task's rows: the other task's hold stays.
    released = held if actor.is_superuser else held[:1]
    LogEntry.objects.all().delete()  # the holds' own entries

    assert _run_action(acting_client, "release_hold", [*held, not_held]) == [
        f"Released {len(released)} hold(s)."
    ]

    entries = _entries_of([*held, not_held])
    assert set(entries) == {w.pk for w in released}
    for worker in held:
        old = (worker.held_at, worker.held_reason)
        worker.refresh_from_db()
        if worker not in released:
            assert (worker.held_at, worker.held_reason) == old
            continue
        assert (worker.held_at, worker.held_reason) == (None, "")
        entry = entries[worker.pk]
        assert (entry.action, entry.actor, entry.remote_addr) == (LogEntry.Action.UPDATE, actor, "127.0.0.1")
        assert entry.changes == {"held_at": [old[0].isoformat(), None], "held_reason": [old[1], ""]}
        assert entry.additional_data["task_id"] == worker.task_id
    not_held.refresh_from_db()
    assert (not_held.held_at, not_held.listing) == (None, "allowed")
