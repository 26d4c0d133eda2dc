"""Who sees which examples (``annotation.selectors.examples_visible_to``): an annotator their own,
retracted ones too; a task owner every example of the task, once however many owners it has; an outsider
or an anonymous visitor none. On ``small_round`` (tests/annotation/conftest.py)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser

from annotation import selectors


def test_examples_visible_to(hate_task, small_round, annotator, validator, owner, outsider):
    assert selectors.examples_visible_to(annotator).count() == 4  # A, C, D, F (retracted ones too)
    assert selectors.examples_visible_to(validator).count() == 2
    assert selectors.examples_visible_to(owner).count() == 6
    assert selectors.examples_visible_to(outsider).count() == 0
    assert selectors.examples_visible_to(AnonymousUser()).count() == 0


def test_owner_sees_each_example_once_when_the_task_has_several_owners(
    hate_task, small_round, owner, django_user_model
):
    second = django_user_model.objects.create_user(username="second-owner", password="x" * 20)
    hate_task.owners.add(second)
    assert selectors.examples_visible_to(owner).count() == 6
