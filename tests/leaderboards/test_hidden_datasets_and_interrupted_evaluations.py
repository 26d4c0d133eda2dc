"""Hidden datasets are evaluated only on request; evaluations stuck "running" become failed and retriable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Dataset, Score
from leaderboards.scheduling import (
    EVALUATION_INTERRUPTED,
    fail_interrupted_evaluations,
    pending_evaluations,
    request_evaluations,
    retry_evaluations,
)
from leaderboards.selectors import evaluable_datasets
from tests.factories.leaderboards import make_toy_dataset

pytestmark = pytest.mark.django_db


# --- hidden datasets ----------------------------------------------------------------------------------


@pytest.fixture
def three_datasets(hate_task):
    return {
        access: make_toy_dataset(hate_task, f"toy-{access}", access=access, n=4)
        for access in (Dataset.Access.SCORING, Dataset.Access.STANDARD, Dataset.Access.HIDDEN)
    }


def test_automatic_evaluations_skip_hidden_datasets(hate_task, tiny_registered_model, three_datasets):
    assert set(evaluable_datasets().values_list("slug", flat=True)) == {"toy-scoring", "toy-standard"}
    assert set(evaluable_datasets(include_hidden=True).values_list("slug", flat=True)) == {
        "toy-scoring",
        "toy-standard",
        "toy-hidden",
    }
    ids = request_evaluations(queue=False)
    assert sorted(Score.objects.filter(pk__in=ids).values_list("dataset__slug", flat=True)) == [
        "toy-scoring",
        "toy-standard",
    ]
    # Naming the hidden dataset without asking for hidden ones (what the new-dataset signal does) adds nothing.
    assert request_evaluations(dataset=three_datasets["hidden"], queue=False) == []
    assert pending_evaluations(task=hate_task) == sorted(ids)


def test_signal_does_not_evaluate_a_new_hidden_dataset(
    hate_task, tiny_registered_model, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        hidden = make_toy_dataset(hate_task, "new-hidden", access=Dataset.Access.HIDDEN, n=3)
        scoring = make_toy_dataset(hate_task, "new-scoring", access=Dataset.Access.SCORING, n=3)
    assert not Score.objects.filter(dataset=hidden).exists()
    assert Score.objects.get(dataset=scoring).status == Score.Status.DONE


def test_a_model_becoming_ready_is_not_evaluated_on_hidden_datasets(
    hate_task, three_datasets, tiny_model_dir, django_capture_on_commit_callbacks
):
    from models_registry.services import register_local_model

    with django_capture_on_commit_callbacks(execute=True):
        model = register_local_model(task=hate_task, name="fresh", path=str(tiny_model_dir), card={})
    assert sorted(Score.objects.filter(model=model).values_list("dataset__slug", "status")) == [
        ("toy-scoring", "done"),
        ("toy-standard", "done"),
    ]


def test_evaluate_command_runs_a_hidden_dataset_only_when_named(
    hate_task, tiny_registered_model, three_datasets, capsys
):
    call_command("evaluate", "--task", "hate-speech")
    assert "2 evaluation(s)" in capsys.readouterr().out
    assert not Score.objects.filter(dataset=three_datasets["hidden"]).exists()

    call_command("evaluate", "--task", "hate-speech", "--dataset", "toy-hidden")
    assert "1 evaluation(s)" in capsys.readouterr().out
    score = Score.objects.get(dataset=three_datasets["hidden"])
    assert score.status == Score.Status.DONE and score.metrics["n"] == 4

    call_command("evaluate", "--dataset", "toy-hidden")
    assert (
        "Nothing to evaluate: every ready model has a score on dataset toy-hidden" in capsys.readouterr().out
    )
    with pytest.raises(CommandError, match="No dataset 'nope'"):
        call_command("evaluate", "--dataset", "nope")
    with pytest.raises(CommandError, match="No dataset 'toy-hidden--fairness'"):
        call_command("evaluate", "--dataset", "toy-hidden--fairness")  # perturbed copies: never alone


# --- evaluations stuck "running" ---------------------------------------------------------------------


def _scores(model, datasets):
    return [Score.objects.create(model=model, dataset=d) for d in datasets]


def _running_since(score, seconds_ago):
    Score.objects.filter(pk=score.pk).update(
        status=Score.Status.RUNNING, updated_at=timezone.now() - timedelta(seconds=seconds_ago)
    )


def test_fail_interrupted_evaluations(hate_task, tiny_registered_model, three_datasets):
    old, recent, done = _scores(tiny_registered_model, three_datasets.values())
    _running_since(old, 7200)
    _running_since(recent, 10)
    Score.objects.filter(pk=done.pk).update(status=Score.Status.DONE, perf=0.5)

    assert fail_interrupted_evaluations(older_than_seconds=3600) == 1
    statuses = dict(Score.objects.values_list("pk", "status"))
    assert statuses == {old.pk: "failed", recent.pk: "running", done.pk: "done"}
    old.refresh_from_db()
    assert old.error_message == EVALUATION_INTERRUPTED
    assert EVALUATION_INTERRUPTED.startswith("interrupted")

    # At start-up (no worker runs) every running Score was interrupted.
    assert fail_interrupted_evaluations() == 1
    assert fail_interrupted_evaluations() == 0
    assert dict(Score.objects.values_list("pk", "status")) == {
        old.pk: "failed",
        recent.pk: "failed",
        done.pk: "done",
    }
    assert Score.objects.get(pk=done.pk).perf == 0.5


def test_an_interrupted_evaluation_is_retried_and_then_succeeds(
    hate_task, tiny_registered_model, toy_dataset
):
    [score] = _scores(tiny_registered_model, [toy_dataset])
    _running_since(score, 7200)  # the worker was killed an hour ago, past Q_CLUSTER["timeout"] = 3600
    # The admin's retry action first turns the stale Score into a failed one, then retries it.
    assert retry_evaluations([score.pk], queue=False) == [score.pk]
    score.refresh_from_db()
    assert score.status == Score.Status.PENDING and score.error_message == EVALUATION_INTERRUPTED
    assert run_evaluation_job(score.pk) == Score.Status.DONE
    score.refresh_from_db()
    assert score.error_message == "" and score.metrics["n"] == 20


def test_evaluate_command_marks_stale_ones_failed_and_retries_them(
    hate_task, tiny_registered_model, toy_dataset, capsys
):
    [stale] = _scores(tiny_registered_model, [toy_dataset])
    _running_since(stale, 7200)
    call_command("evaluate")
    assert "Nothing to evaluate" in capsys.readouterr().out
    stale.refresh_from_db()
    assert stale.status == Score.Status.FAILED and stale.error_message == EVALUATION_INTERRUPTED
    call_command("evaluate", "--retry-failed")
    assert "1 done" in capsys.readouterr().out
    assert Score.objects.get(pk=stale.pk).status == Score.Status.DONE


def test_a_recent_running_evaluation_is_left_to_its_worker(hate_task, tiny_registered_model, toy_dataset):
    [live] = _scores(tiny_registered_model, [toy_dataset])
    _running_since(live, 60)
    assert pending_evaluations(retry_failed=True) == []
    assert run_evaluation_job(live.pk) == Score.Status.RUNNING  # not claimed twice
    assert Score.objects.get(pk=live.pk).status == Score.Status.RUNNING


def test_a_job_running_after_the_timeout_sweeps_others(
    hate_task, tiny_registered_model, three_datasets, settings
):
    stale, pending, _ = _scores(tiny_registered_model, three_datasets.values())
    _running_since(stale, 7200)
    assert run_evaluation_job(pending.pk) == Score.Status.DONE
    assert Score.objects.get(pk=stale.pk).status == Score.Status.FAILED
    # Without a worker timeout there is no safe bound: nothing is swept by the job.
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": None}
    _running_since(stale, 7200)
    Score.objects.filter(pk=pending.pk).update(status=Score.Status.PENDING)
    assert run_evaluation_job(pending.pk) == Score.Status.DONE
    assert Score.objects.get(pk=stale.pk).status == Score.Status.RUNNING
