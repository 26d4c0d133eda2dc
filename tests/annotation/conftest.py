"""Fixtures of the annotation tests: ``writer``, the annotator signed in on the hate-speech create page
with its rule model (a test file may define its own); ``small_round``, a round of six examples whose counts and
visibility are worked out by hand (tests/annotation/test_round_statistics.py and
tests/annotation/test_example_visibility.py; tests/annotation/test_export.py has a ``small_round`` of
its own)."""

from __future__ import annotations

import pytest

from annotation.services import create_example, retract_example
from models_registry import inference
from tests.helpers.fakes import crashing_predict, rule_predict


def _create(task, user, statement, label):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target=label)[0]


@pytest.fixture
def writer(client, annotator, password, rule_model):
    """The annotator's client, signed in; hate-speech's round scored by ``rule_model``."""
    client.login(username=annotator.username, password=password)
    return client


@pytest.fixture
def small_round(hate_task, annotator, validator, rule_model, monkeypatch):
    """Six examples, by hand: A, B fool the model; C fools it but is retracted; D, E do not fool it;
    F is unscored (the model crashed). Collected = A B D E F = 5, scored = A B D E = 4, model-fooling = 2,
    MER = 2/4 (F, awaiting a model verdict, is in neither numerator nor denominator)."""
    _create(hate_task, annotator, "they should go back home", "hateful")  # A: model says not-hateful
    _create(hate_task, validator, "I hate nothing about them", "not-hateful")  # B: model says hateful
    c = _create(hate_task, annotator, "go back home", "hateful")  # C: fooled, then retracted
    retract_example(example=c, user=annotator)
    _create(hate_task, annotator, "I hate them", "hateful")  # D
    _create(hate_task, validator, "hello world", "not-hateful")  # E
    monkeypatch.setattr(inference, "predict", crashing_predict)
    _create(hate_task, annotator, "nice people", "not-hateful")  # F
    monkeypatch.setattr(inference, "predict", rule_predict)
    return hate_task.current_round
