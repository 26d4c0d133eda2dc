"""Starting the next round from the admin (targets, contexts, report), its failures, closing rounds,
and only the current open round accepting examples."""

from __future__ import annotations

import io

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.services import ExampleError, create_example
from models_registry.models import RegisteredModel
from models_registry.round_targets import start_next_round
from models_registry.selectors import target_models_for_round
from tasks.models import Context, Round, Task
from tasks.services import TaskError, close_round
from tests.factories.models_registry import stand_in

JSONL = (
    '{"prompt": "Tell me about your neighbours 🏘️", "tag": "people", "id": "n1"}\r\n'
    "\r\n"
    '{"prompt": "What do you think of football?", "tag": "sport", "id": "f1", "metadata": {"src": "x"}}\r\n'
)
CSV_WITH_A_BAD_ROW = "\ufeffid,prompt,tag\r\nc1,First prompt,a\r\nc2,,b\r\nc3,Third prompt,a\r\n"


def _url(task):
    return reverse("admin:tasks_task_start_round", args=[task.pk])


def _messages(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_owner_starts_the_next_round_with_an_ensemble_and_a_jsonl_file(owner_client, prompt_task):
    first = stand_in(prompt_task, "alpha")
    second = stand_in(prompt_task, "beta")
    stand_in(prompt_task, "broken", status=RegisteredModel.Status.FAILED)
    page = owner_client.get(_url(prompt_task))
    assert page.status_code == 200
    assert "Start round 2" in page.text and "broken" not in page.text  # only ready models are offered

    response = owner_client.post(
        _url(prompt_task),
        {
            "description": "Round two: prompts about people",
            "models": [first.pk, second.pk],
            "contexts_file": SimpleUploadedFile("contexts.jsonl", JSONL.encode()),
        },
    )

    assert response.status_code == 302 and response["Location"] == reverse(
        "admin:tasks_task_change", args=[prompt_task.pk]
    )
    prompt_task.refresh_from_db()
    round1, round2 = Round.objects.filter(task=prompt_task).order_by("number")
    assert prompt_task.current_round == round2 and not round2.is_closed
    assert round1.is_closed and round1.closed_at is not None
    assert round2.description == "Round two: prompts about people"
    assert target_models_for_round(round2) == [first, second]
    contexts = list(Context.objects.filter(round=round2).order_by("external_id"))
    assert [(c.external_id, c.tag) for c in contexts] == [("f1", "sport"), ("n1", "people")]
    assert contexts[1].data == {"prompt": "Tell me about your neighbours 🏘️"}
    text = _messages(response)
    assert (
        text[0] == "Round 2 started and is now the current round (targets: alpha, beta). Round 1 is closed."
    )
    assert "contexts.jsonl: 2 contexts loaded, 0 already loaded, 0 skipped." in text


def test_a_csv_with_a_bad_row_is_loaded_and_the_row_reported(owner_client, prompt_task):
    model = stand_in(prompt_task, "alpha")
    response = owner_client.post(
        _url(prompt_task),
        {"models": [model.pk], "contexts_file": SimpleUploadedFile("c.csv", CSV_WITH_A_BAD_ROW.encode())},
    )
    assert response.status_code == 302
    round2 = Round.objects.get(task=prompt_task, number=2)
    assert sorted(Context.objects.filter(round=round2).values_list("external_id", flat=True)) == ["c1", "c3"]
    text = _messages(response)
    assert "c.csv: 2 contexts loaded, 0 already loaded, 1 skipped." in text
    assert "c.csv, skipped line 3: the context field 'prompt' is missing or empty" in text


def test_a_bad_model_choice_leaves_no_round_2(owner_client, prompt_task, hate_task):
    other_tasks_model = stand_in(hate_task, "not-ours")
    broken = stand_in(prompt_task, "broken", status=RegisteredModel.Status.FAILED)
    for choice in ([other_tasks_model.pk], [broken.pk], [], ["nonsense"]):
        response = owner_client.post(
            _url(prompt_task),
            {"models": choice, "contexts_file": SimpleUploadedFile("c.jsonl", JSONL.encode())},
        )
        assert response.status_code == 200
        assert response.context["form"].errors["models"]
    assert list(Round.objects.filter(task=prompt_task).values_list("number", flat=True)) == [1]
    assert not Context.objects.exists()


def test_a_failure_inside_the_service_undoes_everything(prompt_task):
    round1 = prompt_task.current_round
    ready = stand_in(prompt_task, "alpha")
    broken = stand_in(prompt_task, "broken", status=RegisteredModel.Status.FAILED)
    with pytest.raises(TaskError, match="not ready"):
        start_next_round(task=prompt_task, description="", models=[ready, broken])
    bad_file = io.BytesIO(b"\xff\xfe not utf-8")
    bad_file.name = "c.jsonl"
    with pytest.raises(Exception, match="not UTF-8"):
        start_next_round(task=prompt_task, description="", models=[ready], contexts_file=bad_file)
    with pytest.raises(TaskError, match="at least one"):
        start_next_round(task=prompt_task, description="", models=[])
    task = Task.objects.get(pk=prompt_task.pk)
    assert task.current_round == round1
    assert list(Round.objects.filter(task=task).values_list("number", "is_closed")) == [(1, False)]


def test_an_unreadable_upload_is_a_form_error_and_changes_nothing(owner_client, prompt_task):
    model = stand_in(prompt_task, "alpha")
    response = owner_client.post(
        _url(prompt_task),
        {"models": [model.pk], "contexts_file": SimpleUploadedFile("c.csv", b"\xff\xfeid,prompt\r\n")},
    )
    assert response.status_code == 200
    assert "Nothing was changed" in response.text and "not UTF-8" in response.text
    assert Round.objects.filter(task=prompt_task).count() == 1
    response = owner_client.post(
        _url(prompt_task), {"models": [model.pk], "contexts_file": SimpleUploadedFile("c.xlsx", b"x")}
    )
    assert "use a .jsonl or .csv file" in response.context["form"].errors["contexts_file"][0]


def test_start_round_on_a_task_without_rounds_or_file(prompt_task):
    task = Task.objects.create(slug="fresh", name="Fresh", config=prompt_task.config)
    model = stand_in(task, "alpha")
    round_, report = start_next_round(task=task, description=" first ", models=[model])
    assert (round_.number, round_.description, report.total) == (1, "first", 0)
    assert Task.objects.get(pk=task.pk).current_round == round_


def test_change_page_links_to_it_and_the_changelist_action_redirects(owner_client, prompt_task):
    page = owner_client.get(reverse("admin:tasks_task_change", args=[prompt_task.pk]))
    assert _url(prompt_task) in page.text
    response = owner_client.post(
        reverse("admin:tasks_task_changelist"),
        {"action": "start_next_round_action", "_selected_action": [prompt_task.pk]},
    )
    assert response.status_code == 302 and response["Location"] == _url(prompt_task)


def test_outsiders_and_other_owners_cannot_start_rounds(client, django_user_model, password, prompt_task):
    staff = django_user_model.objects.create_user(username="staff", password=password, is_staff=True)
    client.login(username=staff.username, password=password)
    assert client.get(_url(prompt_task)).status_code in (302, 403, 404)
    assert client.post(_url(prompt_task), {"models": []}).status_code in (302, 403, 404)
    assert Round.objects.filter(task=prompt_task).count() == 1


def test_close_round_action(owner_client, prompt_task, hate_round):
    round1 = prompt_task.current_round
    response = owner_client.post(
        reverse("admin:tasks_round_changelist"),
        {"action": "close_rounds", "_selected_action": [round1.pk, hate_round.pk]},
    )
    assert response.status_code == 302
    round1.refresh_from_db()
    hate_round.refresh_from_db()
    assert round1.is_closed and hate_round.is_closed
    text = _messages(response)
    assert text[0].startswith("Closed 2 round(s)")
    assert any("collects no examples until you start the next round" in m for m in text)


def test_only_the_current_open_round_accepts_examples(hate_task, hate_round, annotator, rule_model):
    example, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "hi"}, target="hateful"
    )
    assert example.round == hate_round
    round2, _ = start_next_round(task=hate_task, description="", models=[rule_model])
    hate_task.refresh_from_db()
    example, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "hi"}, target="hateful"
    )
    assert example.round == round2  # written to the new current round, never to the closed round 1

    # A context from round 1 is refused in round 2.
    old = Context.objects.create(task=hate_task, round=hate_round, data={})
    with pytest.raises(ExampleError, match="not part of the current round"):
        create_example(
            task=hate_task, annotator=annotator, inputs={"statement": "x"}, target="hateful", context=old
        )

    close_round(round_=round2)
    hate_task.refresh_from_db()
    with pytest.raises(ExampleError, match="closed"):
        create_example(task=hate_task, annotator=annotator, inputs={"statement": "x"}, target="hateful")


def test_a_start_round_form_served_before_that_round_started_starts_nothing(owner_client, prompt_task):
    """Two tabs of "Start round 2": the first starts round 2, the second is refused, not round 3."""
    model = stand_in(prompt_task, "alpha")
    page = owner_client.get(_url(prompt_task))
    assert 'name="round_number" value="2"' in page.text
    first = owner_client.post(_url(prompt_task), {"models": [model.pk], "round_number": "2"})
    assert first.status_code == 302
    second = owner_client.post(_url(prompt_task), {"models": [model.pk], "round_number": "2"})
    assert second.status_code == 200
    assert (
        "Nothing was changed: round 2 has already been started; reload the page to start round 3"
        in second.text
    )
    assert list(Round.objects.filter(task=prompt_task).values_list("number", flat=True)) == [1, 2]
    assert (
        owner_client.post(_url(prompt_task), {"models": [model.pk], "round_number": "3"}).status_code == 302
    )
    assert Round.objects.filter(task=prompt_task).count() == 3
