import copy

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Example

pytestmark = pytest.mark.django_db


def _relabelled(task):
    config = copy.deepcopy(task.config)
    config["target_field"]["labels"] = ["a", "b"]
    config.pop("label_descriptions", None)  # the built-in definitions name the old labels
    return config


def test_labels_may_change_while_the_task_is_empty(hate_task, hate_round):
    hate_task.config = _relabelled(hate_task)
    hate_task.full_clean()


def test_labels_cannot_change_once_examples_use_them(hate_task, hate_round):
    Example.objects.create(round=hate_round, inputs={"statement": "x"}, target="hateful")
    hate_task.config = _relabelled(hate_task)
    with pytest.raises(ValidationError, match="The labels cannot change from"):
        hate_task.full_clean()


def test_other_config_changes_stay_allowed(hate_task, hate_round):
    Example.objects.create(round=hate_round, inputs={"statement": "x"}, target="hateful")
    config = copy.deepcopy(hate_task.config)
    config["content_warning"] = "Updated warning."
    hate_task.config = config
    hate_task.full_clean()
