"""Fixtures for the round lifecycle tests: the owner logged in, owning the prompt task too."""

from __future__ import annotations

import pytest


@pytest.fixture
def owner_client(client, owner, password, prompt_task):
    """The owner fixture (owner of hate-speech) logged in, and made owner of the prompt task too."""
    prompt_task.owners.add(owner)
    client.login(username=owner.username, password=password)
    return client
