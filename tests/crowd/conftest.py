"""Fixtures of the crowd tests: a Prolific study on hate-speech round 1 (``tests.factories.crowd.make_study``)."""

from __future__ import annotations

import pytest

from tests.factories.crowd import make_study


@pytest.fixture
def study(hate_round, owner):
    return make_study(hate_round)
