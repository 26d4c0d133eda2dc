"""Admin: training jobs (read-only), "Train the next round's target", promote a model, export downloads."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.contrib.admin import helpers
from django.urls import reverse

from annotation.services import create_example
from cycle.models import TrainingJob
from models_registry.models import RegisteredModel
from models_registry.selectors import target_models_for_round
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Round, Task
from tasks.services import ensure_round, set_current_round


@pytest.fixture
def owner_client(client, owner, password):
    client.login(username=owner.username, password=password)
    return client


@pytest.fixture
def other_task(db):
    task = Task.objects.create(slug="other", name="Other task", config=copy.deepcopy(HATE_SPEECH_CONFIG))
    set_current_round(task=task, round_=ensure_round(task=task, number=1))
    return task


def _action(client, model: str, action: str, ids, **data):
    url = reverse(f"admin:{model}_changelist")
    return client.post(url, {"action": action, helpers.ACTION_CHECKBOX_NAME: [str(i) for i in ids], **data})


def test_training_job_admin_is_read_only_and_shows_errors(owner_client, hate_task, hate_round, other_task):
    job = TrainingJob.objects.create(
        task=hate_task, rounds=[1], status="failed", error_message="no validated training examples <b>"
    )
    TrainingJob.objects.create(task=other_task, rounds=[1])
    response = owner_client.get(reverse("admin:cycle_trainingjob_changelist") + "?status__exact=failed")
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [job]  # the other task's job is not listed
    page = owner_client.get(reverse("admin:cycle_trainingjob_change", args=[job.pk]))
    assert page.status_code == 200
    assert "no validated training examples &lt;b&gt;" in page.content.decode()
    assert reverse("admin:cycle_trainingjob_add") not in page.content.decode()
    assert owner_client.post(reverse("admin:cycle_trainingjob_change", args=[job.pk]), {}).status_code == 403


def test_train_next_round_target_form_then_job(
    owner_client,
    owner,
    hate_task,
    round1_training_data,
    tiny_backbone_dir,
    django_capture_on_commit_callbacks,
):
    form = _action(owner_client, "tasks_task", "train_next_round_target", [hate_task.pk])
    assert form.status_code == 200
    assert "Train the next round" in form.content.decode()
    assert "{#" not in form.content.decode()
    # The admin form offers no backbone choice; run the queued job on the tiny backbone for speed.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _action(
            owner_client,
            "tasks_task",
            "train_next_round_target",
            [hate_task.pk],
            apply="1",
            rounds=["1"],
            recipe="quick",
            name="from-admin",
            promote="current",
        )
    assert response.status_code == 302
    job = TrainingJob.objects.get()
    assert (job.rounds, job.recipe, job.name, job.target_round, job.requested_by) == (
        [1],
        "quick",
        "from-admin",
        1,
        owner,
    )
    assert len(callbacks) == 1
    TrainingJob.objects.filter(pk=job.pk).update(backbone_path=str(tiny_backbone_dir))
    callbacks[0]()
    job.refresh_from_db()
    assert job.status == "done", job.error_message
    assert target_models_for_round(round1_training_data) == [job.model]


def test_train_action_needs_one_task(owner_client, hate_task, other_task, owner):
    other_task.owners.add(owner)
    response = _action(owner_client, "tasks_task", "train_next_round_target", [hate_task.pk, other_task.pk])
    assert response.status_code == 302
    assert not TrainingJob.objects.exists()


def _ready_model(task, name):
    return RegisteredModel.objects.create(task=task, name=name, path="/nowhere", status="ready")


def test_make_target_of_current_round(owner_client, hate_task, hate_round):
    model = _ready_model(hate_task, "m1")
    response = _action(
        owner_client, "models_registry_registeredmodel", "make_target_of_current_round", [model.pk]
    )
    assert response.status_code == 302
    assert target_models_for_round(hate_round) == [model]


def test_start_next_round_with_model(owner_client, hate_task, hate_round):
    model = _ready_model(hate_task, "m2")
    confirm = _action(
        owner_client, "models_registry_registeredmodel", "start_next_round_with_models", [model.pk]
    )
    assert confirm.status_code == 200
    assert "Start round 2" in confirm.content.decode()
    assert "{#" not in confirm.content.decode()  # a template comment shown as text
    assert Round.objects.filter(task=hate_task).count() == 1  # nothing changed before the confirmation
    done = _action(
        owner_client,
        "models_registry_registeredmodel",
        "start_next_round_with_models",
        [model.pk],
        apply="1",
        description="Round two",
    )
    assert done.status_code == 302
    hate_task.refresh_from_db()
    assert hate_task.current_round.number == 2
    assert target_models_for_round(hate_task.current_round) == [model]
    hate_round.refresh_from_db()
    assert hate_round.is_closed


def test_outsider_models_are_not_promoted(owner_client, hate_task, other_task):
    theirs = _ready_model(other_task, "theirs")
    _action(owner_client, "models_registry_registeredmodel", "make_target_of_current_round", [theirs.pk])
    assert target_models_for_round(other_task.current_round) == []


def test_export_actions_stream_downloads(owner_client, hate_task, hate_round, rule_model, annotator):
    create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "I hate 🐀\r\nyes"}, target="hateful"
    )
    response = _action(owner_client, "tasks_round", "export_rounds_jsonl", [hate_round.pk])
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Disposition"] == 'attachment; filename="hate-speech-round-1.jsonl"'
    [record] = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert record["inputs"] == {"statement": "I hate 🐀\nyes"}
    response = _action(owner_client, "tasks_task", "export_task_csv", [hate_task.pk])
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="hate-speech.csv"'
    assert b"".join(response.streaming_content).decode().startswith("format_version,task,licence,example_id")


def test_export_is_for_owners_only(
    client, outsider, password, hate_task, hate_round, other_task, owner_client
):
    outsider.is_staff = True
    outsider.save()
    client.login(username=outsider.username, password=password)
    response = _action(client, "tasks_round", "export_rounds_jsonl", [hate_round.pk])
    assert response.status_code in (302, 403)
    assert not getattr(response, "streaming", False)
    # An owner selecting another task's round gets nothing from it (the changelist hides it).
    response = _action(owner_client, "tasks_round", "export_rounds_csv", [other_task.current_round.pk])
    assert not getattr(response, "streaming", False)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("minilm-quick-r1-2", "a model named minilm-quick-r1-2 already exists for task hate-speech"),
        ("../../evil", "invalid model name"),
        ("a/b", "invalid model name"),
        (".hidden", "invalid model name"),
        ("😀 model", "invalid model name"),
    ],
)
def test_train_form_refuses_taken_and_invalid_names(
    owner_client, hate_task, hate_round, settings, name, error
):
    _ready_model(hate_task, "minilm-quick-r1-2")
    response = _action(
        owner_client,
        "tasks_task",
        "train_next_round_target",
        [hate_task.pk],
        apply="1",
        rounds=["1"],
        recipe="quick",
        name=name,
        promote="none",
    )
    assert response.status_code == 200  # the form again, with the error at the name
    assert error in " ".join(response.context["form"].errors["name"])
    assert error.replace("'", "&#x27;") in response.content.decode()
    assert not TrainingJob.objects.exists()
    assert not Path(settings.DYNABENCH_MODEL_DIR).exists()


def test_train_form_refuses_a_taken_default_name(owner_client, hate_task, hate_round):
    _ready_model(hate_task, "minilm-quick-r1")
    response = _action(
        owner_client,
        "tasks_task",
        "train_next_round_target",
        [hate_task.pk],
        apply="1",
        rounds=["1"],
        recipe="quick",
        name="",
        promote="none",
    )
    assert response.status_code == 200
    assert "a model named minilm-quick-r1 already exists" in " ".join(response.context["form"].errors["name"])
    assert not TrainingJob.objects.exists()


def test_name_help_texts_show_their_placeholders(owner_client, hate_task, hate_round):
    job = TrainingJob.objects.create(task=hate_task, rounds=[1], status="failed")
    page = owner_client.get(reverse("admin:cycle_trainingjob_change", args=[job.pk])).content.decode()
    assert "minilm--r." not in page.replace("<recipe>", "").replace("<rounds>", "")
    assert "blank: {backbone}-{recipe}-r{rounds}[-nat{share}]" in page
    form = _action(owner_client, "tasks_task", "train_next_round_target", [hate_task.pk]).content.decode()
    assert "blank: {backbone}-{recipe}-r{rounds}[-nat{share}]" in form


def test_run_again_requeues_failed_jobs_and_explains_refusals(
    owner_client, hate_task, hate_round, django_capture_on_commit_callbacks
):
    interrupted = TrainingJob.objects.create(
        task=hate_task, rounds=[1], name="again", status="failed", error_message="interrupted: ..."
    )
    _ready_model(hate_task, "taken")
    done = TrainingJob.objects.create(task=hate_task, rounds=[1], name="taken", status="done")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = owner_client.post(
            reverse("admin:cycle_trainingjob_changelist"),
            {"action": "run_again", helpers.ACTION_CHECKBOX_NAME: [interrupted.pk, done.pk]},
            follow=True,
        )
    assert response.status_code == 200
    new = TrainingJob.objects.exclude(pk__in=[interrupted.pk, done.pk]).get()
    assert (new.status, new.name, new.rounds) == ("queued", "again", [1])
    assert len(callbacks) == 1
    text = " ".join(str(m) for m in response.context["messages"])
    assert "1 training job(s) queued." in text
    assert "a model named taken already exists" in text


def _dataset(task, slug, name, *, kind="static", access="standard", items=1):
    from leaderboards.models import Dataset, DatasetItem

    dataset = Dataset.objects.create(task=task, slug=slug, name=name, kind=kind, access=access)
    for i in range(items):
        DatasetItem.objects.create(
            dataset=dataset, external_id=str(i), inputs={"statement": "x"}, target="hateful"
        )
    return dataset


def _train_form_text(client, task) -> str:
    import re

    html = _action(client, "tasks_task", "train_next_round_target", [task.pk]).content.decode()
    found = re.search(
        r'<p id="training-data">(.*?)</p>\s*<p id="leaderboard-datasets">(.*?)Training runs', html, re.S
    )
    return " ".join(" ".join(found.groups()).split())


def test_train_form_says_what_the_task_is_measured_on(owner_client, owner, hate_task, hate_round, other_task):
    # Regression: the page once said "their test splits and HateCheck" for every task, whatever its
    # datasets.
    _dataset(hate_task, "hatecheck", "HateCheck")
    _dataset(hate_task, "round-1-test", "Round 1 test", kind="round", access="scoring")
    _dataset(hate_task, "hatemoji-check", "HatemojiCheck")
    _dataset(
        hate_task, "round-1-train", "Round 1 train", kind="round", access="hidden"
    )  # hidden: not evaluated
    _dataset(hate_task, "empty", "Empty set", items=0)  # no item: nothing to evaluate
    _dataset(hate_task, "hatecheck--robustness", "HateCheck (robustness)", kind="perturbed")
    assert _train_form_text(owner_client, hate_task) == (
        "The model is trained on the settled (validated correct, not retracted) examples of the rounds you "
        "choose, plus their imported training data, and chosen on their dev split. Its model card gives its "
        "accuracy on those rounds' test splits and on HateCheck. Once registered it is evaluated for the "
        "leaderboard on the task's scoring and standard datasets: HateCheck, HatemojiCheck, Round 1 test."
    )
    other_task.owners.add(owner)
    _dataset(other_task, "round-1-test", "Round 1 test", kind="round", access="scoring", items=0)
    assert _train_form_text(owner_client, other_task) == (
        "The model is trained on the settled (validated correct, not retracted) examples of the rounds you "
        "choose, plus their imported training data, and chosen on their dev split. Its model card gives its "
        "accuracy on those rounds' test splits. Once registered it is evaluated for the leaderboard on the "
        "task's scoring and standard datasets (this task has none yet)."
    )


def test_train_form_of_a_span_task_names_squad_f1(owner_client, owner):
    from tasks.services import ensure_builtin_task

    qa = ensure_builtin_task("qa")
    qa.owners.add(owner)
    _dataset(qa, "hatecheck", "HateCheck")  # a dataset of that slug is not used for a span model's card
    text = _train_form_text(owner_client, qa)
    assert "Its model card gives its SQuAD F1 and exact match on those rounds' test splits. Once" in text
