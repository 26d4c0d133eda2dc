"""An example's history: each state change with its time and every vote, in the API, the export and
its page (docs/domain.md, "Example history").

Times are fixed by passing ``now`` to the services (as ``next_example(now=...)`` is tested), and the
example's ``created_at`` is set with an update (``auto_now_add`` ignores a given value).
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from annotation.exports import FORMAT_VERSION, iter_export, pseudonym
from annotation.models import Example
from annotation.services import flag_example, retract_example
from tests.factories.annotation import make_example
from tests.factories.validation import submit_served
from validation.services import submit_validation

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 4, 10, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def lived(hate_round, annotator, owner, validator):
    """Written at T0, flagged by its author at +1, the owner's vote at +2, a validator's at +3, the owner
    verdict that settles it at +4, retracted at +5."""
    example = make_example(hate_round, annotator)
    Example.objects.filter(pk=example.pk).update(created_at=T0)
    flag_example(example=example, user=annotator, reason="typo", now=_at(1))
    submit_served(example=example, validator=owner, verdict="correct", now=_at(2))
    submit_served(example=example, validator=validator, verdict="flagged", now=_at(3))
    submit_validation(
        example=example,
        validator=owner,
        verdict="incorrect",
        corrected_label="not-hateful",
        owner_mode=True,
        now=_at(4),
    )
    # Retracted after it settled: the service now refuses that (annotation.services.retract_example), but
    # examples retracted so before the rule keep that history, and the pages must show it.
    Example.objects.filter(pk=example.pk).update(is_retracted=True, retracted_at=_at(5))
    example.refresh_from_db()
    return example


def test_each_state_change_is_stored_with_its_time(lived):
    assert (lived.status, lived.is_flagged_by_annotator, lived.is_retracted) == (
        "validated_incorrect",
        True,
        True,
    )
    assert (lived.created_at, lived.flagged_at, lived.settled_at, lived.retracted_at) == (
        T0,
        _at(1),
        _at(4),
        _at(5),
    )


def test_retracting_again_keeps_the_first_time(lived, annotator):
    retract_example(example=lived, user=annotator, now=_at(9))
    lived.refresh_from_db()
    assert lived.retracted_at == _at(5)


def test_api_shows_the_history(api, lived, annotator, owner, validator, hate_round):
    for user in (annotator, owner):
        body = api(user).get(f"/api/examples/{lived.pk}/").json()
        assert (body["created_at"], body["flagged_at"], body["settled_at"], body["retracted_at"]) == (
            "2025-03-04T10:00:00Z",
            "2025-03-04T10:01:00Z",
            "2025-03-04T10:04:00Z",
            "2025-03-04T10:05:00Z",
        )
        assert body["validations"] == [
            {
                "validator": pseudonym(hate_round.pk, owner.pk),
                "verdict": "correct",
                "corrected_label": "",
                "is_owner_verdict": False,
                "created_at": "2025-03-04T10:02:00Z",
            },
            {
                "validator": pseudonym(hate_round.pk, validator.pk),
                "verdict": "flagged",
                "corrected_label": "",
                "is_owner_verdict": False,
                "created_at": "2025-03-04T10:03:00Z",
            },
            {
                "validator": pseudonym(hate_round.pk, owner.pk),
                "verdict": "incorrect",
                "corrected_label": "not-hateful",
                "is_owner_verdict": True,
                "created_at": "2025-03-04T10:04:00Z",
            },
        ]
    listed = api(annotator).get("/api/tasks/hate-speech/examples/").json()["results"]
    assert [(e["id"], e["settled_at"], len(e["validations"])) for e in listed] == [
        (lived.pk, "2025-03-04T10:04:00Z", 3)
    ]


def test_api_shows_null_for_changes_that_did_not_happen(api, hate_round, annotator):
    example = make_example(hate_round, annotator)
    body = api(annotator).get(f"/api/examples/{example.pk}/").json()
    assert (body["settled_at"], body["retracted_at"], body["flagged_at"], body["validations"]) == (
        None,
        None,
        None,
        [],
    )


def test_export_shows_the_history(hate_task, lived, owner, validator, hate_round):
    assert FORMAT_VERSION == "1.5"
    [record] = [json.loads(line) for line in "".join(iter_export(hate_task)).splitlines()]
    assert (record["created_at"], record["flagged_at"], record["settled_at"], record["retracted_at"]) == (
        "2025-03-04T10:00:00+00:00",
        "2025-03-04T10:01:00+00:00",
        "2025-03-04T10:04:00+00:00",
        "2025-03-04T10:05:00+00:00",
    )
    votes = [
        (v["validator"], v["verdict"], v["is_owner_verdict"], v["created_at"])
        for v in json.loads(record["validations"])
    ]
    assert votes == [
        (pseudonym(hate_round.pk, owner.pk), "correct", False, "2025-03-04T10:02:00+00:00"),
        (pseudonym(hate_round.pk, validator.pk), "flagged", False, "2025-03-04T10:03:00+00:00"),
        (pseudonym(hate_round.pk, owner.pk), "incorrect", True, "2025-03-04T10:04:00+00:00"),
    ]
    assert record["n_validations"] == 3
    [row] = csv.DictReader(io.StringIO("".join(iter_export(hate_task, fmt="csv")), newline=""))
    assert (row["settled_at"], row["retracted_at"], row["flagged_at"]) == (
        "2025-03-04T10:04:00+00:00",
        "2025-03-04T10:05:00+00:00",
        "2025-03-04T10:01:00+00:00",
    )


def test_export_writes_empty_text_for_changes_that_did_not_happen(hate_task, hate_round, annotator):
    make_example(hate_round, annotator)
    [record] = [json.loads(line) for line in "".join(iter_export(hate_task)).splitlines()]
    assert (record["settled_at"], record["retracted_at"], record["flagged_at"]) == ("", "", "")


def test_the_example_page_shows_the_history(client, lived, annotator, password):
    client.login(username=annotator.username, password=password)
    page = client.get(reverse("annotation:outcome", args=[lived.pk]))
    assert page.status_code == 200
    history = page.text.split('<ol class="history">')[1].split("</ol>")[0]
    items = [re.sub(r"\s+", " ", item).strip() for item in re.findall(r"<li>(.*?)</li>", history, re.S)]
    assert items == [
        '<time datetime="2025-03-04T10:00:00+00:00">2025-03-04 10:00:00 UTC</time> Written',
        '<time datetime="2025-03-04T10:01:00+00:00">2025-03-04 10:01:00 UTC</time> '
        "Flagged for the task owners by its author",
        '<time datetime="2025-03-04T10:02:00+00:00">2025-03-04 10:02:00 UTC</time> Verdict: correct',
        '<time datetime="2025-03-04T10:03:00+00:00">2025-03-04 10:03:00 UTC</time> Verdict: flagged',
        '<time datetime="2025-03-04T10:04:00+00:00">2025-03-04 10:04:00 UTC</time> '
        "Owner verdict: incorrect (corrected label: not-hateful)",
        '<time datetime="2025-03-04T10:04:00+00:00">2025-03-04 10:04:00 UTC</time> Settled: validated incorrect',
        '<time datetime="2025-03-04T10:05:00+00:00">2025-03-04 10:05:00 UTC</time> Retracted by its author',
    ]
