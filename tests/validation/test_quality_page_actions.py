"""Owners act on what the quality page shows (issue 29): each validator and annotator of the round links
to their standing on the task (``tasks.TaskWorker``, its admin change page), where the owner blocks,
holds or allows them; the row is made on the way when the person has none. Only the task's owners and
superusers reach the page and the links."""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse

from annotation.exports import pseudonym
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Task, TaskWorker
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.tasks import open_round
from tests.factories.validation import ValidationFactory

pytestmark = pytest.mark.django_db

PAGE = "/tasks/hate-speech/rounds/1/quality/"


def person_url(round_number: int, person: str) -> str:
    return f"/tasks/hate-speech/rounds/{round_number}/quality/people/{person}/"


@pytest.fixture
def people(hate_round, owner):
    """Annotator ``writer`` (one example, settled correct); validators ``va`` and ``vb`` on it. Nobody
    has a ``TaskWorker`` row yet (rows made by factories, not by the services)."""
    writer, va, vb = (UserFactory(username=n) for n in ("writer", "va", "vb"))
    example = make_example(hate_round, writer, status="validated_correct")
    ValidationFactory(example=example, validator=va, verdict="correct")
    ValidationFactory(example=example, validator=vb, verdict="incorrect")
    assert not TaskWorker.objects.exists()
    return {"writer": writer, "va": va, "vb": vb}


def test_every_person_on_the_page_links_to_their_standing(client, owner, hate_round, people):
    client.force_login(owner)
    text = client.get(PAGE).text
    for name in ("writer", "va", "vb"):
        link = person_url(1, pseudonym(hate_round.pk, people[name].pk))
        assert f'href="{link}"' in text, name
    # The writer is in the annotators' table, the validators in theirs: three links, one per row.
    assert text.count("/quality/people/anon-") == 3


def test_the_link_makes_the_missing_row_and_opens_its_admin_page(
    client, owner, hate_task, hate_round, people
):
    client.force_login(owner)
    va = people["va"]
    response = client.get(person_url(1, pseudonym(hate_round.pk, va.pk)))
    worker = TaskWorker.objects.get(task=hate_task, user=va)
    assert (worker.listing, worker.held_at) == ("", None)  # made, standing unchanged
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:tasks_taskworker_change", args=[worker.pk])
    # Following it again finds the same row.
    again = client.get(person_url(1, pseudonym(hate_round.pk, va.pk)))
    assert again["Location"] == response["Location"] and TaskWorker.objects.count() == 1
    page = client.get(response["Location"])
    assert page.status_code == 200 and "va" in page.text and 'name="held"' in page.text


def _change_form(worker, **fields) -> dict:
    return {
        "listing": worker.listing,
        "listing_reason": worker.listing_reason,
        "held_reason": worker.held_reason,
        **({"held": "on"} if worker.held_at else {}),
        **fields,
    }


def test_on_that_page_the_owner_blocks_holds_allows_and_releases(
    client, owner, hate_task, hate_round, people
):
    client.force_login(owner)
    writer = people["writer"]
    location = client.get(person_url(1, pseudonym(hate_round.pk, writer.pk)))["Location"]
    worker = TaskWorker.objects.get(task=hate_task, user=writer)

    response = client.post(location, _change_form(worker, listing="blocked", listing_reason="Copied text."))
    assert response.status_code == 302
    worker.refresh_from_db()
    assert (worker.listing, worker.listing_reason, worker.held_at) == ("blocked", "Copied text.", None)

    response = client.post(
        location,
        _change_form(worker, listing="", listing_reason="", held="on", held_reason="Check the labels."),
    )
    assert response.status_code == 302
    worker.refresh_from_db()
    assert (worker.listing, worker.held_reason) == ("", "Check the labels.")
    assert worker.held_at is not None

    # A hold without a reason gets one naming who placed it; unticking "held" releases it.
    response = client.post(location, _change_form(worker, listing="allowed"))  # still held, same reason
    worker.refresh_from_db()
    assert (worker.listing, worker.held_reason) == ("allowed", "Check the labels.") and worker.held_at
    form = _change_form(worker)
    del form["held"]
    client.post(location, form)
    worker.refresh_from_db()
    assert (worker.listing, worker.held_at, worker.held_reason) == ("allowed", None, "")
    client.post(location, _change_form(worker, held="on", held_reason=""))
    worker.refresh_from_db()
    assert worker.held_at is not None and worker.held_reason == "Held by owner in the admin."


def test_the_hold_action_on_the_changelist(client, owner, hate_task, people):
    client.force_login(owner)
    worker = TaskWorker.objects.create(task=hate_task, user=people["vb"])
    url = reverse("admin:tasks_taskworker_changelist")
    client.post(url, {"action": "hold", "_selected_action": [worker.pk]})
    worker.refresh_from_db()
    assert worker.held_at is not None and worker.held_reason == "Held by owner in the admin."


def test_only_owners_and_superusers_reach_the_page_and_the_links(
    client, owner, hate_task, hate_round, people
):
    link = person_url(1, pseudonym(hate_round.pk, people["va"].pk))
    other_owner = UserFactory(username="other-owner", is_staff=True)
    other = Task.objects.create(slug="other", name="Other", config=copy.deepcopy(HATE_SPEECH_CONFIG))
    other.owners.add(other_owner)
    for who in (other_owner, people["va"]):
        client.force_login(who)
        assert client.get(PAGE).status_code == 404
        assert client.get(link).status_code == 404
    assert not TaskWorker.objects.exists()  # nothing made for a refused caller
    client.logout()
    response = client.get(link)
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))

    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    assert 'href="' + link + '"' in client.get(PAGE).text
    assert client.get(link).status_code == 302
    assert TaskWorker.objects.filter(task=hate_task, user=people["va"]).exists()


def test_a_person_not_in_the_round_is_not_found(client, owner, hate_task, hate_round, people, outsider):
    client.force_login(owner)
    assert client.get(person_url(1, pseudonym(hate_round.pk, outsider.pk))).status_code == 404
    assert client.get(person_url(1, "anon-0000000000000000")).status_code == 404
    assert client.get(person_url(1, "not-a-pseudonym")).status_code == 404
    # The writer's pseudonym of round 1 means nothing in round 2 (pseudonyms are per round).
    open_round(hate_task, 2)
    assert client.get(person_url(2, pseudonym(hate_round.pk, people["writer"].pk))).status_code == 404
    assert client.get(person_url(9, pseudonym(hate_round.pk, people["writer"].pk))).status_code == 404
    assert not TaskWorker.objects.exists()
