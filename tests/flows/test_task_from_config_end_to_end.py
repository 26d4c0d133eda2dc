"""A new classification task made in the admin from a config alone, used end to end with no code.

The story docs/demo.md promises ("A new classification task needs no code"): a site admin creates a
2-label "sarcasm" task in the Django admin (slug, name, config JSON), naming an owner; the owner
registers a model with the same labels (a zip upload in the admin), starts round 1 with it; an
annotator writes an example on the create page (built from the config), the model answers on the
server; a validator sees the config's fields and labels on the validate page; the owner exports the
round. No line of code knows the word "sarcasm".
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Example, Prediction
from engine.runtime.classifier import get_classifier
from models_registry.models import RegisteredModel
from tasks.models import Task
from tests.helpers.tiny_models import build_tiny_classifier

pytestmark = pytest.mark.django_db

LABELS = ["sarcastic", "sincere"]


def sarcasm_config(rule: str = "exact_match") -> dict:
    return {
        "context_fields": [],
        "input_fields": [
            {"name": "utterance", "type": "string", "label": "Utterance", "max_length": 500},
        ],
        "target_field": {
            "name": "tone",
            "type": "multiclass",
            "label": "The tone you intend",
            "labels": LABELS,
        },
        "model_wrong_rule": {"type": rule},
        "perf_metric": "macro_f1",
        "licence": "CC0 (written here)",
    }


@pytest.fixture
def site_admin(django_user_model, password):
    return django_user_model.objects.create_superuser("site-admin", "site@example.org", password)


@pytest.fixture
def task_owner(django_user_model, password):
    return django_user_model.objects.create_user("sarcasm-owner", "o@example.org", password, is_staff=True)


def _zip(directory) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(directory.iterdir()):
            archive.writestr(path.name, path.read_bytes())
    return SimpleUploadedFile("model.zip", buffer.getvalue(), content_type="application/zip")


def _create_task_in_admin(client, site_admin, task_owner, config: dict) -> Task:
    client.force_login(site_admin)
    response = client.post(
        reverse("admin:tasks_task_add"),
        {
            "name": "Sarcasm",
            "slug": "sarcasm",
            "config": json.dumps(config),
            "instructions": "Write a sarcastic remark the model takes as sincere, or the reverse.",
            "owners": [task_owner.pk],
            "validation_quorum": 1,
            "is_active": "on",
            "rounds-TOTAL_FORMS": 0,
            "rounds-INITIAL_FORMS": 0,
            "tutorial_items-TOTAL_FORMS": 0,
            "tutorial_items-INITIAL_FORMS": 0,
            "gold_share": 0,
            "gold_min_answers": 5,
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    return Task.objects.get(slug="sarcasm")


def _register_and_start_round(client, task_owner, task, tmp_path, capture) -> RegisteredModel:
    """The owner uploads a zip in the admin (its check job runs on commit), then starts round 1 with it."""
    client.force_login(task_owner)
    model_dir = build_tiny_classifier(tmp_path / "sarcasm-tiny", labels=tuple(LABELS), seed=3)
    with capture(execute=True):
        response = client.post(
            reverse("admin:models_registry_registeredmodel_register"),
            {"source": "upload", "name": "sarcasm-tiny", "task": task.pk, "zip_file": _zip(model_dir)},
        )
    assert response.status_code == 302
    model = RegisteredModel.objects.get(task=task, name="sarcasm-tiny")
    assert model.status == RegisteredModel.Status.READY, model.error_message
    with capture(execute=True):
        response = client.post(
            reverse("admin:tasks_task_start_round", args=[task.pk]),
            {"description": "First sarcasm round", "models": [model.pk]},
        )
    assert response.status_code == 302
    task.refresh_from_db()
    targets = list(task.current_round.targets.values_list("model", flat=True))
    assert task.current_round.number == 1 and targets == [model.pk]
    return model


def _write(client, annotator, task, utterance: str, tone: str) -> Example:
    client.force_login(annotator)
    page = client.get(reverse("annotation:create", args=[task.slug]))
    form = page.context["form"]
    assert list(form.fields)[:2] == ["utterance", "tone"]
    assert [choice for choice, _ in form.fields["tone"].choices] == LABELS
    html = page.content.decode()
    assert 'name="utterance"' in html and 'value="sarcastic"' in html and "The tone you intend" in html
    response = client.post(
        reverse("annotation:create", args=[task.slug]),
        {
            "utterance": utterance,
            "tone": tone,
            "client_token": form.initial["client_token"],
            "started": form.initial["started"],
        },
    )
    assert response.status_code == 302, response.context["form"].errors
    return Example.objects.get(annotator=annotator, inputs__utterance=utterance)


def test_a_sarcasm_task_made_in_the_admin_works_end_to_end(
    client, site_admin, task_owner, annotator, validator, tmp_path, django_capture_on_commit_callbacks
):
    task = _create_task_in_admin(client, site_admin, task_owner, sarcasm_config())
    assert task.cfg.labels == LABELS and task.owners.filter(pk=task_owner.pk).exists()
    model = _register_and_start_round(client, task_owner, task, tmp_path, django_capture_on_commit_callbacks)

    utterance = "Oh great, another Monday 🙄 — just what I needed"
    expected = get_classifier(model.path).predict_batch([utterance])[0]
    # Intend the label the model does not give, so that the example fools it (and goes to validation).
    intended = next(label for label in LABELS if label != expected["label"])
    example = _write(client, annotator, task, utterance, intended)
    prediction = Prediction.objects.get(example=example)
    assert prediction.label == expected["label"] and prediction.model_wrong is True
    assert example.model_wrong is True
    assert example.inputs == {"utterance": utterance} and example.target == intended
    outcome = client.get(reverse("annotation:outcome", args=[example.pk])).content.decode()
    assert "The tone you intend" in outcome and "You fooled the model!" in outcome

    # The validator sees the config's field label (as the author's), the intended label and the label choices.
    client.force_login(validator)
    url = reverse("validation:validate", args=[task.slug])
    page = client.get(url)
    html = page.content.decode()
    assert (
        "The author&#x27;s utterance" in html
        and "another Monday" in html
        and f'<strong dir="auto">{intended}</strong>' in html
    )
    assert [c for c, _ in page.context["form"].fields["corrected_label"].choices] == ["", *LABELS]
    client.post(url, {"example": example.pk, "verdict": "correct", "round": 1})
    example.refresh_from_db()
    assert example.status == Example.Status.VALIDATED_CORRECT  # quorum 1

    # The owner exports the round: the config's fields, the model's label and the licence.
    client.force_login(task_owner)
    response = client.post(
        reverse("admin:tasks_task_changelist"),
        {"action": "export_task_jsonl", "_selected_action": [task.pk]},
    )
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    (record,) = [json.loads(line) for line in body.splitlines()]
    assert record["task"] == "sarcasm" and record["licence"] == "CC0 (written here)"
    assert record["inputs"] == {"utterance": utterance} and record["target"] == intended
    assert record["predicted_labels"] == expected["label"] and record["model_wrong"] is True
    assert record["status"] == "validated_correct"


def test_the_admin_names_each_config_problem_by_its_path(client, site_admin, task_owner):
    bad = sarcasm_config()
    bad["target_field"]["labels"] = ["only-one"]
    bad["perf_metric"] = "bleu"
    client.force_login(site_admin)
    response = client.post(
        reverse("admin:tasks_task_add"),
        {
            "name": "Sarcasm",
            "slug": "sarcasm",
            "config": json.dumps(bad),
            "validation_quorum": 3,
            "rounds-TOTAL_FORMS": 0,
            "rounds-INITIAL_FORMS": 0,
            "tutorial_items-TOTAL_FORMS": 0,
            "tutorial_items-INITIAL_FORMS": 0,
            "gold_share": 0,
            "gold_min_answers": 5,
        },
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["config"]
    assert any(e.startswith("config['perf_metric']:") and "bleu" in e for e in errors)
    assert any(e.startswith("config['target_field']['labels']:") for e in errors)
    assert not Task.objects.filter(slug="sarcasm").exists()


def test_a_model_with_other_labels_is_refused_for_the_task(
    client, site_admin, task_owner, tmp_path, django_capture_on_commit_callbacks
):
    task = _create_task_in_admin(client, site_admin, task_owner, sarcasm_config())
    client.force_login(task_owner)
    wrong = build_tiny_classifier(tmp_path / "hate-labels")  # hateful / not-hateful
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("admin:models_registry_registeredmodel_register"),
            {"source": "upload", "name": "wrong-labels", "task": task.pk, "zip_file": _zip(wrong)},
        )
    model = RegisteredModel.objects.get(task=task, name="wrong-labels")
    assert model.status == RegisteredModel.Status.FAILED
    assert "do not match task labels ['sarcastic', 'sincere']" in model.error_message


def test_ask_user_the_author_says_whether_the_model_was_wrong(
    client, site_admin, task_owner, annotator, outsider, tmp_path, django_capture_on_commit_callbacks
):
    task = _create_task_in_admin(client, site_admin, task_owner, sarcasm_config("ask_user"))
    _register_and_start_round(client, task_owner, task, tmp_path, django_capture_on_commit_callbacks)
    example = _write(client, annotator, task, "I just love waiting in line for hours", "sarcastic")
    # The server does not decide: the example waits for its author's answer.
    assert example.model_wrong is None and example.prediction_status == Example.PredictionStatus.OK
    page = client.get(reverse("annotation:outcome", args=[example.pk])).content.decode()
    assert "Did the model get it wrong?" in page
    url = reverse("annotation:model_wrong_verdict", args=[example.pk])

    # Someone else cannot answer for the author (their own-examples lookup is a 404).
    client.force_login(outsider)
    assert client.post(url, {"wrong": "yes"}).status_code == 404

    client.force_login(annotator)
    assert client.post(url, {"wrong": "maybe"}).status_code == 302
    example.refresh_from_db()
    assert example.model_wrong is None
    client.post(url, {"wrong": "yes"})
    client.post(url, {"wrong": "yes"})  # a double click changes nothing
    example.refresh_from_db()
    assert example.model_wrong is True
    assert list(Prediction.objects.filter(example=example).values_list("model_wrong", flat=True)) == [True]
    # A different second answer is refused; the first stands.
    response = client.post(url, {"wrong": "no"}, follow=True)
    assert "that answer stands" in response.content.decode()
    example.refresh_from_db()
    assert example.model_wrong is True
    assert (
        "Did the model get it wrong?"
        not in client.get(reverse("annotation:outcome", args=[example.pk])).content.decode()
    )
