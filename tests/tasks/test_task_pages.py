"""The task list and a task's page (instructions, content warning, per-round counts and MER)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.services import create_example, retract_example
from tasks.services import close_round


def _create(task, user, statement, label):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target=label)[0]


def test_task_list_links_the_task_page(client, hate_round):
    response = client.get(reverse("tasks:list"))
    assert response.status_code == 200
    assert f'href="{reverse("tasks:detail", args=["hate-speech"])}"' in response.text
    assert "round 1" in response.text


def test_task_page_shows_instructions_warning_counts_and_mer(
    client, hate_task, annotator, validator, rule_model
):
    # By hand: 4 collected (the retracted one is not counted), 1 model-fooling -> MER 25%.
    _create(hate_task, annotator, "they should go back home", "hateful")  # fooled
    _create(hate_task, annotator, "I hate them", "hateful")
    _create(hate_task, validator, "hello world", "not-hateful")
    _create(hate_task, validator, "nice people", "not-hateful")
    retract_example(example=_create(hate_task, annotator, "go away", "hateful"), user=annotator)

    response = client.get(reverse("tasks:detail", args=[hate_task.slug]))

    assert response.status_code == 200
    text = response.text
    assert "Content warning." in text and "hateful and offensive language" in text
    assert "Write a statement that the model labels wrongly" in text
    assert f'href="{reverse("annotation:create", args=[hate_task.slug])}"' in text
    [row] = response.context["round_counts"]
    assert (row.collected, row.fooling, row.mer) == (4, 1, 0.25)
    assert "<td>4</td>" in text and "<td>1</td>" in text and "25%" in text


def test_closed_round_hides_the_write_button(client, hate_task, hate_round):
    close_round(round_=hate_round)
    response = client.get(reverse("tasks:detail", args=[hate_task.slug]))
    assert "not collecting examples" in response.text
    assert reverse("annotation:create", args=[hate_task.slug]) not in response.text


@pytest.mark.django_db
def test_unknown_task_is_404(client):
    assert client.get("/tasks/no-such-task/").status_code == 404
