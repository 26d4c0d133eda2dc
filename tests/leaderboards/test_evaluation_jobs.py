"""Evaluation end to end with the tiny model; only missing evaluations; failures and retries; signals."""

from __future__ import annotations

import shutil

import pytest
from django.contrib.admin.sites import site
from django.core.management import call_command
from django.urls import reverse

from engine.runtime.classifier import clear_cache
from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Dataset, Score
from leaderboards.scheduling import pending_evaluations, request_evaluations, retry_evaluations
from models_registry.models import RegisteredModel
from tests.factories.leaderboards import make_toy_dataset

pytestmark = pytest.mark.django_db

METRIC_KEYS = {"accuracy", "macro_f1", "throughput", "memory", "fairness", "robustness", "n"}


def _run_all(score_ids):
    return [run_evaluation_job(pk) for pk in score_ids]


def test_tiny_model_evaluated_end_to_end(tiny_registered_model, toy_dataset):
    [score_id] = request_evaluations(model=tiny_registered_model, queue=False)
    assert run_evaluation_job(score_id) == Score.Status.DONE
    score = Score.objects.get(pk=score_id)
    m = score.metrics
    assert METRIC_KEYS <= set(m)
    assert m["n"] == 20
    assert 0 <= score.perf <= 1 and score.perf == m["accuracy"]
    assert 0 <= m["macro_f1"] <= 1
    assert m["throughput"] > 0
    assert 0 < m["memory"] < 4  # GiB: the tiny model's weights plus its working memory
    assert 0 <= m["fairness"] <= 1 and m["fairness_n"] > 0
    assert 0 <= m["robustness"] <= 1 and m["robustness_n"] == 20
    assert m["peak_rss"] > 0
    assert score.per_tag["all"]["n"] == 20
    assert score.per_tag["all"]["accuracy"] == pytest.approx(m["accuracy"])
    assert sum(v["n"] for k, v in score.per_tag.items() if k.startswith("group:")) == 20
    # The perturbed copies exist as datasets of their own, and are never evaluated themselves.
    assert set(Dataset.objects.filter(kind=Dataset.Kind.PERTURBED).values_list("slug", flat=True)) == {
        "toy--fairness",
        "toy--robustness",
    }
    assert request_evaluations(model=tiny_registered_model, queue=False) == []


def test_predictions_consistent_with_the_model(tiny_registered_model, toy_dataset):
    from models_registry.inference import predict

    [score_id] = request_evaluations(model=tiny_registered_model, queue=False)
    run_evaluation_job(score_id)
    items = list(toy_dataset.items.order_by("pk"))
    outputs = predict(tiny_registered_model, [i.inputs for i in items])
    correct = sum(o["label"] == i.target for o, i in zip(outputs, items, strict=True))
    assert Score.objects.get(pk=score_id).perf == pytest.approx(correct / len(items))


def test_only_missing_evaluations_are_created(hate_task, tiny_registered_model, toy_dataset):
    first = request_evaluations(queue=False)
    assert len(first) == 1
    assert request_evaluations(queue=False) == []  # nothing new
    second_dataset = make_toy_dataset(hate_task, "toy-2", access=Dataset.Access.SCORING, n=4)
    make_toy_dataset(hate_task, "toy-3", access=Dataset.Access.STANDARD, n=3)
    make_toy_dataset(hate_task, "toy-hidden", access=Dataset.Access.HIDDEN, n=3)
    Dataset.objects.create(task=hate_task, slug="empty", name="Empty", kind=Dataset.Kind.IMPORTED)
    new = request_evaluations(dataset=second_dataset, queue=False)
    assert [Score.objects.get(pk=pk).dataset.slug for pk in new] == ["toy-2"]
    rest = request_evaluations(queue=False)
    # The empty one is skipped; the hidden one is not evaluated automatically.
    assert [Score.objects.get(pk=pk).dataset.slug for pk in rest] == ["toy-3"]
    assert Score.objects.count() == 3


def test_a_grown_dataset_is_evaluated_again(tiny_registered_model, hate_task):
    from leaderboards.models import DatasetItem

    dataset = make_toy_dataset(hate_task, "growing", n=4)
    _run_all(request_evaluations(queue=False))
    DatasetItem.objects.create(
        dataset=dataset, external_id="x", inputs={"statement": "hello"}, target="hateful"
    )
    [again] = request_evaluations(queue=False)
    assert Score.objects.get(pk=again).status == Score.Status.PENDING
    assert run_evaluation_job(again) == Score.Status.DONE
    assert Score.objects.get(pk=again).metrics["n"] == 5


def test_a_second_model_triggers_only_its_own(hate_task, tiny_registered_model, toy_dataset, tmp_path):
    from models_registry.services import register_local_model
    from tests.helpers.tiny_models import build_tiny_classifier

    _run_all(request_evaluations(queue=False))
    other = register_local_model(
        task=hate_task, name="other", path=str(build_tiny_classifier(tmp_path / "o", seed=1)), card={}
    )
    new = request_evaluations(queue=False)
    assert [Score.objects.get(pk=pk).model for pk in new] == [other]


def test_safe_to_run_twice(tiny_registered_model, toy_dataset):
    [score_id] = request_evaluations(queue=False)
    assert run_evaluation_job(score_id) == Score.Status.DONE
    assert run_evaluation_job(score_id) == Score.Status.DONE  # not claimed again: returns the status
    Score.objects.filter(pk=score_id).update(status=Score.Status.RUNNING)
    assert run_evaluation_job(score_id) == Score.Status.RUNNING


def test_failure_keeps_its_error_and_retry_works(tiny_registered_model, toy_dataset, tmp_path):
    path = tiny_registered_model.path
    moved = tmp_path / "moved"
    shutil.move(path, moved)
    clear_cache()
    [score_id] = request_evaluations(queue=False)
    assert run_evaluation_job(score_id) == Score.Status.FAILED
    score = Score.objects.get(pk=score_id)
    assert "does not exist" in score.error_message and score.perf is None
    assert request_evaluations(queue=False) == []  # a failed one is not redone by itself
    shutil.move(moved, path)
    assert retry_evaluations([score_id], queue=False) == [score_id]
    score.refresh_from_db()
    assert score.status == Score.Status.PENDING and "does not exist" in score.error_message  # kept
    assert run_evaluation_job(score_id) == Score.Status.DONE
    score.refresh_from_db()
    assert score.error_message == "" and score.perf is not None
    assert retry_evaluations([score_id], queue=False) == []  # only failed ones are retried


def test_unexpected_exception_is_stored(tiny_registered_model, toy_dataset, monkeypatch):
    import leaderboards.evaluation as evaluation

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(evaluation, "evaluate_model_on_dataset", boom)
    [score_id] = request_evaluations(queue=False)
    assert run_evaluation_job(score_id) == Score.Status.FAILED
    assert Score.objects.get(pk=score_id).error_message == "RuntimeError: disk on fire"


def test_jobs_are_queued_after_commit_through_django_q(
    tiny_registered_model, toy_dataset, django_capture_on_commit_callbacks, monkeypatch
):
    import leaderboards.scheduling as scheduling

    queued = []
    monkeypatch.setattr(scheduling, "_enqueue_evaluation", queued.append)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        ids = request_evaluations()
    assert queued == []
    for callback in callbacks:
        callback()
    assert queued == ids


def test_inline_queue_runs_the_job(tiny_registered_model, toy_dataset, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        [score_id] = request_evaluations()
    assert Score.objects.get(pk=score_id).status == Score.Status.DONE


def test_signal_on_a_model_becoming_ready(
    hate_task, toy_dataset, tiny_model_dir, django_capture_on_commit_callbacks
):
    from models_registry.services import register_local_model

    with django_capture_on_commit_callbacks(execute=True):
        model = register_local_model(task=hate_task, name="fresh", path=str(tiny_model_dir), card={})
    score = Score.objects.get(model=model, dataset=toy_dataset)
    assert score.status == Score.Status.DONE  # the inline job cluster ran it
    with django_capture_on_commit_callbacks(execute=True):
        RegisteredModel.objects.create(task=hate_task, name="broken", status=RegisteredModel.Status.FAILED)
    assert not Score.objects.filter(model__name="broken").exists()


def test_signal_on_a_new_dataset(hate_task, tiny_registered_model, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        dataset = make_toy_dataset(hate_task, "brand-new", n=5)
    assert Score.objects.get(dataset=dataset).status == Score.Status.DONE
    # Perturbed copies made by that evaluation are not evaluated as datasets of their own.
    assert not Score.objects.filter(dataset__kind=Dataset.Kind.PERTURBED).exists()


def test_evaluate_command(hate_task, tiny_registered_model, toy_dataset, capsys):
    call_command("evaluate", "--task", "hate-speech")
    out = capsys.readouterr().out
    assert "1 evaluation(s)" in out and "1 done" in out
    call_command("evaluate", "--task", "hate-speech", "--model", "tiny-target")
    assert "Nothing to evaluate" in capsys.readouterr().out


def test_evaluate_command_retries_failed(hate_task, tiny_registered_model, toy_dataset, capsys):
    [score_id] = request_evaluations(queue=False)
    Score.objects.filter(pk=score_id).update(status=Score.Status.FAILED, error_message="earlier failure")
    call_command("evaluate")
    assert "Nothing to evaluate" in capsys.readouterr().out
    call_command("evaluate", "--retry-failed")
    assert Score.objects.get(pk=score_id).status == Score.Status.DONE


def test_pending_evaluations_for_a_model(tiny_registered_model, toy_dataset):
    ids = pending_evaluations(model=tiny_registered_model)
    assert len(ids) == 1


def test_admin_retry_action(
    client, owner, password, tiny_registered_model, toy_dataset, django_capture_on_commit_callbacks
):
    [score_id] = request_evaluations(queue=False)
    Score.objects.filter(pk=score_id).update(status=Score.Status.FAILED, error_message="boom")
    client.login(username=owner.username, password=password)
    url = reverse("admin:leaderboards_score_changelist")
    page = client.get(url)
    assert page.status_code == 200 and b"boom" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url, {"action": "retry_failed_evaluations", "_selected_action": [score_id]}, follow=True
        )
    assert b"1 failed evaluation(s) queued again" in response.content
    assert response.status_code == 200
    score = Score.objects.get(pk=score_id)
    assert score.status == Score.Status.DONE  # jobs run inline in tests
    assert "retry_failed_evaluations" in site.get_model_admin(Score).actions


def test_a_runtime_changed_while_the_evaluation_ran_queues_it_again(
    tiny_registered_model, toy_dataset, monkeypatch
):
    """The pin's own request skips a running Score; the job itself sees the figures are of another
    runtime than the model now serves, and puts the Score back in the queue instead of storing them."""
    import leaderboards.evaluation as evaluation
    import leaderboards.scheduling as scheduling

    assert tiny_registered_model.runtime == "torch"
    real = evaluation.evaluate_model_on_dataset

    def pinned_meanwhile(model, dataset, **kwargs):
        result = real(model, dataset, **kwargs)  # measured on torch
        RegisteredModel.objects.filter(pk=model.pk).update(runtime="onnx-fp32")
        return result

    queued = []
    monkeypatch.setattr(evaluation, "evaluate_model_on_dataset", pinned_meanwhile)
    monkeypatch.setattr(scheduling, "_enqueue_evaluation", queued.append)
    [score_id] = request_evaluations(queue=False)
    assert run_evaluation_job(score_id) == Score.Status.PENDING
    score = Score.objects.get(pk=score_id)
    assert score.status == Score.Status.PENDING and score.perf is None
    assert queued == [score_id]

    monkeypatch.setattr(evaluation, "evaluate_model_on_dataset", real)
    RegisteredModel.objects.filter(pk=tiny_registered_model.pk).update(runtime="torch")
    assert run_evaluation_job(score_id) == Score.Status.DONE  # same runtime before and after: stored
    assert Score.objects.get(pk=score_id).metrics["runtime"] == "torch"
