"""The owner's study page in the admin (docs/crowd.md, "The study page"): places taken, active, completed,
each running participant's time left and the money owed (ledger rows not yet paid, per currency); and the
add form, which shows the entry key that saving it stores and warns when the validations asked for cannot
be reached (the task's quorum, or only model-fooling examples validated)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from annotation.services import create_example
from crowd import services
from crowd.models import Participation, Study
from tests.factories.annotation import make_example
from tests.factories.crowd import enter_as, make_study, study_add_form
from tests.factories.validation import submit_served

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner_client(owner, password):
    client = Client()
    client.login(username=owner.username, password=password)
    return client


def _field(page: str, name: str) -> str:
    """The text of the read-only field ``name`` on an admin change page."""
    block = page.split(f"field-{name}")[1].split('<div class="readonly">')[1].split("</div>")[0]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", block)).strip()


def test_the_study_page_shows_places_time_left_and_money_owed(
    owner_client, hate_task, hate_round, rule_model, annotator
):
    study = make_study(hate_round, time_limit_minutes=60)  # 0.50, 0.10, 0.25, reward 1.00, 3 places
    done = enter_as(study, "PID-DONE").user
    for n in range(2):
        create_example(task=hate_task, annotator=done, inputs={"statement": f"they {n}"}, target="hateful")
    submit_served(example=make_example(hate_round, annotator), validator=done, verdict="correct")
    services.complete(participation=Participation.objects.get(user=done))
    working = enter_as(study, "PID-WORKING")
    create_example(task=hate_task, annotator=working.user, inputs={"statement": "they"}, target="hateful")
    Participation.objects.filter(pk=working.participation.pk).update(
        started_at=timezone.now() - timedelta(minutes=20)
    )
    gone = enter_as(study, "PID-GONE")
    services.return_study(participation=gone.participation)

    url = f"/admin/crowd/study/{study.pk}/change/"
    page = owner_client.get(url).text
    assert _field(page, "places_shown") == "2 of 3 taken: 1 active, 1 completed · 1 returned, 0 abandoned"
    assert _field(page, "time_left_shown").startswith("PID-WORKING: 40 min left (until ")
    # Owed, by hand: PID-DONE 2 x 0.50 + 0.10 + 1.00 reward = 2.10; PID-WORKING 0.50; total 2.60 in 5 rows.
    assert _field(page, "money_owed_shown") == (
        "GBP 2.60 in 5 rows not yet paid (of which 1.00 in rewards the platform pays on approval)"
    )

    call_command("export_payments", "--study", str(study.public_id), "--dry-run")  # changes nothing
    assert "GBP 2.60 in 5 rows" in _field(owner_client.get(url).text, "money_owed_shown")
    call_command("export_payments", "--study", str(study.public_id), "--output", "/dev/null")
    assert _field(owner_client.get(url).text, "money_owed_shown") == "Nothing owed: every row is paid."
    create_example(task=hate_task, annotator=working.user, inputs={"statement": "they 2"}, target="hateful")
    assert _field(owner_client.get(url).text, "money_owed_shown") == "GBP 0.50 in 1 row not yet paid"

    # Past its time limit a participation no longer counts as active, even before the job records it.
    Participation.objects.filter(pk=working.participation.pk).update(
        started_at=timezone.now() - timedelta(minutes=61)
    )
    page = owner_client.get(url).text
    assert _field(page, "places_shown") == "1 of 3 taken: 0 active, 1 completed · 1 returned, 1 abandoned"
    assert _field(page, "time_left_shown") == "No one is working on it now."


def _shown_key(page: str) -> str:
    return re.search(r'<code id="entry-key-shown">([A-Za-z0-9_-]{43})</code>', page).group(1)


def _token(page: str) -> str:
    return re.search(r'name="entry_key_token" value="([^"]+)"', page).group(1)


def test_the_add_form_shows_the_key_that_is_saved(owner_client, hate_round):
    page = owner_client.get("/admin/crowd/study/add/").text
    key = _shown_key(page)
    assert "Shown once the study is saved" not in page.split("field-entry_key")[1].split("</div>")[0]
    # A form sent back with an error shows the same key again, and saving it stores that key.
    refused = owner_client.post(
        "/admin/crowd/study/add/",
        study_add_form(hate_round, examples_required="0", entry_key_token=_token(page)),
    )
    assert refused.status_code == 200 and _shown_key(refused.text) == key
    saved = owner_client.post(
        "/admin/crowd/study/add/", study_add_form(hate_round, entry_key_token=_token(refused.text))
    )
    assert saved.status_code == 302
    assert Study.objects.get(name="From the admin").entry_key == key
    # Two add pages show two keys.
    assert _shown_key(owner_client.get("/admin/crowd/study/add/").text) != key


def test_a_changed_or_reused_key_is_refused_and_nothing_saved(owner_client, hate_round):
    page = owner_client.get("/admin/crowd/study/add/").text
    token = _token(page)
    changed = owner_client.post(
        "/admin/crowd/study/add/", study_add_form(hate_round, entry_key_token=token[:-3] + "abc")
    )
    assert changed.status_code == 200
    assert "The entry key shown was changed; it was not saved. Save the form again" in changed.text
    assert not Study.objects.exists()
    assert (
        owner_client.post(
            "/admin/crowd/study/add/", study_add_form(hate_round, entry_key_token=token)
        ).status_code
        == 302
    )
    reused = owner_client.post(
        "/admin/crowd/study/add/", study_add_form(hate_round, name="Second", entry_key_token=token)
    )
    assert reused.status_code == 200
    assert "This entry key is already saved with another study" in reused.text
    assert Study.objects.count() == 1


def test_the_add_form_shows_no_public_id_it_would_not_save(owner_client, hate_round):
    """A tester copied the uuid shown on the add form into an entry link: it was a fresh uuid on every
    load, never the saved study's. The add form shows no public id, link or creation time; the saved
    study's page shows its own."""
    page = owner_client.get("/admin/crowd/study/add/").text
    assert "field-public_id" not in page and "field-entry_link_shown" not in page
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", page)
    saved = owner_client.post(
        "/admin/crowd/study/add/", study_add_form(hate_round, entry_key_token=_token(page))
    )
    assert saved.status_code == 302
    study = Study.objects.get(name="From the admin")
    shown = owner_client.get(f"/admin/crowd/study/{study.pk}/change/").text
    assert "field-public_id" in shown and str(study.public_id) in shown


def test_the_admin_warns_about_unreachable_validations(client, owner, password, hate_task, hate_round):
    hate_task.validation_quorum = 3
    hate_task.config = {**hate_task.config, "validate_non_fooling": False}
    hate_task.save()
    client.login(username=owner.username, password=password)
    form = {
        "name": "Warned",
        "round": hate_round.pk,
        "platform": "generic",
        "examples_required": "1",
        "validations_required": "2",
        "reward": "0",
        "pay_per_example": "0",
        "pay_per_validation": "0",
        "bonus_per_verified_fooling": "0",
        "currency": "",
        "max_participants": "3",
        "completion_code": "G",
        "completion_url": "",
        "time_limit_minutes": "45",
        "consent_text": "Yes.",
        "is_open": "on",
    }
    page = client.post("/admin/crowd/study/add/", form, follow=True).text
    assert "quorum 3 needs 3 validators besides the author" in page
    assert "validates only model-fooling examples" in page
    hate_task.validation_quorum = 2
    hate_task.config = {**hate_task.config, "validate_non_fooling": True}
    hate_task.save()
    quiet = client.post("/admin/crowd/study/add/", {**form, "name": "Quiet"}, follow=True).text
    assert "besides the author" not in quiet and "model-fooling examples" not in quiet
