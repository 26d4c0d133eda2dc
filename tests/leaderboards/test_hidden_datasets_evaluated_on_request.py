"""Hidden datasets are evaluated only on request: automatic evaluations (a new model ready, a new dataset,
``evaluate`` for a task) skip them; ``evaluate --dataset`` naming one runs it (the three datasets of
tests/leaderboards/conftest.py)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from leaderboards.models import Dataset, Score
from leaderboards.scheduling import pending_evaluations, request_evaluations
from leaderboards.selectors import evaluable_datasets
from tests.factories.leaderboards import make_toy_dataset

pytestmark = pytest.mark.django_db


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
