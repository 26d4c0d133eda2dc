"""Shared fixtures: named users (owner, annotator, validator, outsider) and the hate-speech task."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _isolated_model_dir(settings, tmp_path):
    """Models trained by a test go to its own temporary folder, never into var/."""
    settings.DYNABENCH_MODEL_DIR = tmp_path / "models"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """PBKDF2 costs ~0.3 s a user by design; tests need users, not brute-force resistance."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _jobs_inline(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}


@pytest.fixture
def password() -> str:
    return "correct-horse-battery-staple-42"


def _user(django_user_model, username: str, password: str, **extra):
    return django_user_model.objects.create_user(
        username=username, email=f"{username}@example.org", password=password, **extra
    )


@pytest.fixture
def owner(django_user_model, password, hate_task):
    user = _user(django_user_model, "owner", password, is_staff=True)
    hate_task.owners.add(user)
    return user


@pytest.fixture
def annotator(django_user_model, password):
    return _user(django_user_model, "annotator", password)


@pytest.fixture
def validator(django_user_model, password):
    return _user(django_user_model, "validator", password)


@pytest.fixture
def outsider(django_user_model, password):
    """Signed up, owns nothing; blocked users are made from this one where a test needs it."""
    return _user(django_user_model, "outsider", password)


@pytest.fixture
def hate_task(db):
    from tasks.services import ensure_builtin_task

    return ensure_builtin_task("hate-speech")


@pytest.fixture
def hate_round(hate_task):
    """Round 1 of the hate-speech task, current, with no target model yet."""
    from tasks.services import ensure_round, set_current_round

    round_ = ensure_round(task=hate_task, number=1)
    set_current_round(task=hate_task, round_=round_)
    return round_
