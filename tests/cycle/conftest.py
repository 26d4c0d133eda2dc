"""Fixtures of the cycle tests: the leaderboard tests' datasets and scores (the cycle matrix and the
training pages read them)."""

from tests.leaderboards.conftest import make_dataset, score  # noqa: F401
