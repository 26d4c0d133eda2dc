"""A Prolific study across a round change, through the pages, on PostgreSQL (docs/crowd.md, "When the
round changes").

Three participants enter round 1's study (2 examples and 2 validations per submission; 0.50 per example,
0.10 per validation, 0.25 per verified model-fooling example, 1.00 reward). p1 does the whole submission
and finishes; p2 writes both examples and casts one verdict, and has a second example served when the
owner starts round 2; p3 has written one example and has the create form open. The owner's start-round
page warns of the live study; starting the round ends it. p2 and p3 are completed early: told, sent to
the completion page, paid for each example and verdict and the reward; their forms are refused, so
nothing lands in round 2 and nothing goes unpaid. A newcomer is refused. Two validators outside the study
then settle round 1's examples (validation goes on in a closed round), and each author's bonus follows.
Every amount is computed by hand in the comments.
"""

from __future__ import annotations

import re
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Example
from crowd.models import LedgerEntry, Participation
from tasks.models import Round
from tests.factories.accounts import UserFactory
from tests.factories.crowd import make_study

pytestmark = pytest.mark.django_db

CREATE = reverse("annotation:create", args=["hate-speech"])
VALIDATE = reverse("validation:validate", args=["hate-speech"])
PIDS = {"p1": "60b1b2c3d4e5f60718293a41", "p2": "60b1b2c3d4e5f60718293a42", "p3": "60b1b2c3d4e5f60718293a43"}
# Hateful statements without "hate": each fools the stand-in target (it says hateful only on "hate").
WRITES = {
    "p1": ["they are vermin", "they are a disease"],
    "p2": ["send them all back", "they are not people"],
    "p3": ["keep them off our streets"],
}


def _link(study, pid: str) -> str:
    query = {"key": study.entry_key, "PROLIFIC_PID": pid, "STUDY_ID": "60bbbbbbbbbbbbbbbbbbbbbb"}
    return f"/study/{study.public_id}/enter/?{urlencode({**query, 'SESSION_ID': f'session-{pid[-2:]}'})}"


def _join(client: Client, study, pid: str) -> None:
    entered = client.get(_link(study, pid))
    assert entered["Location"] == f"/study/{study.public_id}/consent/"
    assert client.post(entered["Location"])["Location"] == CREATE


def _form(client: Client) -> dict:
    page = client.get(CREATE)
    form = page.context["form"]
    return {
        "label": "hateful",
        "client_token": form["client_token"].value(),
        "started": form["started"].value(),
        "round": re.search(r'name="round" value="(\d+)"', page.text).group(1),
    }


def _write(client: Client, statement: str) -> None:
    assert client.post(CREATE, {"statement": statement, **_form(client)}).status_code == 302


def _served(client: Client, url: str = VALIDATE) -> int | None:
    page = client.get(url)
    found = re.search(r'name="example" value="(\d+)"', page.text)
    return int(found.group(1)) if found else None


def _vote(client: Client, example: int, round_number: int = 1):
    return client.post(VALIDATE, {"example": example, "verdict": "correct", "round": round_number})


def _ledger(pid: str) -> dict[str, tuple[int, Decimal]]:
    rows: dict[str, tuple[int, Decimal]] = {}
    for kind, amount in LedgerEntry.objects.filter(worker__crowd_identity__participant_id=pid).values_list(
        "kind", "amount"
    ):
        n, total = rows.get(kind, (0, Decimal("0")))
        rows[kind] = (n + 1, total + amount)
    return rows


def test_a_study_across_a_round_change(hate_task, hate_round, rule_model, owner, password, tmp_path):
    hate_task.validation_quorum = 2
    hate_task.save()
    study = make_study(hate_round, examples_required=2, validations_required=2, max_participants=4)
    clients = {who: Client() for who in PIDS}
    for who, pid in PIDS.items():
        _join(clients[who], study, pid)
    for who, statements in WRITES.items():
        for statement in statements:
            _write(clients[who], statement)
    assert "Study: 1 of 2 examples, 0 of 2 validations" in clients["p3"].get("/").text

    # p1 casts both verdicts and finishes; p2 casts one and is served a second.
    for _ in range(2):
        assert _vote(clients["p1"], _served(clients["p1"])).status_code == 302
    assert clients["p1"].get(f"/study/{study.public_id}/complete/").status_code == 200
    assert _vote(clients["p2"], _served(clients["p2"])).status_code == 302
    served_to_p2 = _served(clients["p2"])
    assert served_to_p2 is not None
    p3_form = {"statement": "they should all leave", **_form(clients["p3"])}  # open in p3's browser

    # The owner's start-round page warns: p2 and p3 are working, and the study is open.
    owner_client = Client()
    owner_client.login(username=owner.username, password=password)
    start = reverse("admin:tasks_task_start_round", args=[hate_task.pk])
    warning = owner_client.get(start).text.split('id="live-studies-warning"')[1].split("</div>")[0]
    assert study.name in warning and "2 participants working" in warning
    started = owner_client.post(start, {"description": "", "models": [rule_model.pk], "round_number": "2"})
    assert started.status_code == 302
    round_2 = Round.objects.get(task=hate_task, number=2)

    # The study ended with the round: p1 had finished; p2 and p3 are completed early.
    study.refresh_from_db()
    assert not study.is_open
    assert {
        p.user.crowd_identity.participant_id: (p.status, p.ended_early) for p in study.participations.all()
    } == {
        PIDS["p1"]: ("completed", False),
        PIDS["p2"]: ("completed", True),
        PIDS["p3"]: ("completed", True),
    }

    # p2's verdict and p3's example sent after the end are refused, and say why; nothing is stored.
    assert _vote(clients["p2"], served_to_p2).status_code == 302
    assert (
        Example.objects.get(pk=served_to_p2)
        .validations.filter(validator__crowd_identity__participant_id=PIDS["p2"])
        .count()
        == 0
    )
    refused = clients["p3"].post(CREATE, {**p3_form, "round": str(round_2.pk)})
    assert "ended early: round 1 of Hate speech closed" in refused.text
    assert "they should all leave" in refused.text  # kept in the form
    assert not Example.objects.filter(round=round_2).exists()
    for who in ("p2", "p3"):
        sent = clients[who].get(CREATE)
        assert sent.status_code == 302 and sent["Location"].startswith(f"/study/{study.public_id}/complete/")
        done = clients[who].get(f"/study/{study.public_id}/complete/")
        assert "C0DE1234" in done.text and "closed before you finished" in done.text
    newcomer = Client().get(_link(study, "60b1b2c3d4e5f60718293a44"))
    assert newcomer.status_code == 409 and "This study has ended" in newcomer.text

    # Two validators outside the study settle every round 1 example (quorum 2, all "correct").
    outside = []
    for n in range(2):
        user = UserFactory(username=f"outside-{n}", password=password)
        client = Client()
        client.login(username=user.username, password=password)
        outside.append(client)
    for client in outside:
        while (example := _served(client, f"{VALIDATE}?round=1")) is not None:
            assert _vote(client, example).status_code == 302
    assert set(Example.objects.filter(round=hate_round).values_list("status", flat=True)) == {
        "validated_correct"
    }

    # The ledger, by hand (GBP):
    #   p1: 2 examples x 0.50 + 2 verdicts x 0.10 + reward 1.00 + 2 bonuses x 0.25 = 2.70
    #   p2: 2 examples x 0.50 + 1 verdict x 0.10 + reward 1.00 + 2 bonuses x 0.25 = 2.60
    #   p3: 1 example x 0.50 + reward 1.00 + 1 bonus x 0.25 = 1.75
    assert _ledger(PIDS["p1"]) == {
        "example": (2, Decimal("1.00")),
        "validation": (2, Decimal("0.20")),
        "reward": (1, Decimal("1.00")),
        "bonus": (2, Decimal("0.50")),
    }
    assert _ledger(PIDS["p2"]) == {
        "example": (2, Decimal("1.00")),
        "validation": (1, Decimal("0.10")),
        "reward": (1, Decimal("1.00")),
        "bonus": (2, Decimal("0.50")),
    }
    assert _ledger(PIDS["p3"]) == {
        "example": (1, Decimal("0.50")),
        "reward": (1, Decimal("1.00")),
        "bonus": (1, Decimal("0.25")),
    }
    assert not LedgerEntry.objects.filter(round=round_2).exists()
    assert Participation.objects.filter(round=round_2).count() == 0

    # The round's cost: 2.70 + 2.60 + 1.75 = 7.05 for 5 examples, all settled and verified model-fooling:
    # 1.41 each.
    cost = owner_client.get("/api/tasks/hate-speech/rounds/1/").json()["statistics"]["cost"]
    assert (cost["total"], cost["per_collected"], cost["per_verified_fooling"]) == ("7.05", "1.41", "1.41")

    # Prolific's bulk bonus file leaves out the rewards (Prolific pays them on approval):
    # p1 2.70 - 1.00 = 1.70, p2 2.60 - 1.00 = 1.60, p3 1.75 - 1.00 = 0.75.
    out = tmp_path / "bonus.csv"
    call_command("export_payments", "--study", str(study.public_id), "--output", str(out))
    assert sorted(out.read_text().splitlines()) == sorted(
        [f"{PIDS['p1']},1.70", f"{PIDS['p2']},1.60", f"{PIDS['p3']},0.75"]
    )
    assert not LedgerEntry.objects.filter(paid_at__isnull=True).exists()
