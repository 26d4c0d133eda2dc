"""Users: ``UserFactory`` makes them with ``create_user`` (hashed password, normalised e-mail)."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

#: The password of every user made here (and of the ``password`` fixture of tests/conftest.py).
PASSWORD = "correct-horse-battery-staple-42"


class UserFactory(DjangoModelFactory):
    """A signed-up user ``user<n>`` with ``<username>@example.org``; pass ``is_blocked`` etc. as fields."""

    class Meta:
        model = "accounts.User"

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    password = PASSWORD

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return cls._get_manager(model_class).create_user(*args, **kwargs)
