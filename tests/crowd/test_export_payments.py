"""export_payments: each platform's file, exact; rows marked paid once, so a second export with nothing
left to pay makes no batch; rewards on Prolific and MTurk left to the platform; workers with a net of 0 or
less left out; the admin action."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import call_command

from crowd.models import LedgerEntry, PaymentBatch
from crowd.payments import export_payments
from tests.factories.crowd import MTURK_IDS, enter_as, make_study

pytestmark = pytest.mark.django_db


def _row(participation, kind, key, amount):
    study = participation.study
    return LedgerEntry.objects.create(
        study=study,
        round=study.round,
        participation=participation,
        worker=participation.user,
        kind=kind,
        event_key=key,
        amount=Decimal(amount),
        currency=study.currency,
    )


def _pay(participation, *rows):
    for kind, key, amount in rows:
        _row(participation, kind, key, amount)


def test_prolific_bulk_bonus_lines_and_rows_paid_once(hate_round, owner, tmp_path, capsys):
    study = make_study(hate_round)
    one = enter_as(study, "PID-ONE").participation
    two = enter_as(study, "PID-TWO").participation
    three = enter_as(study, "PID-THREE").participation
    _pay(
        one,
        ("example", "example:1", "0.50"),
        ("example", "example:2", "0.50"),
        ("validation", "validation:1", "0.10"),
        ("bonus", "bonus:1:1", "0.25"),
        ("reward", f"reward:{one.pk}", "1.00"),
    )
    _pay(two, ("example", "example:3", "0.50"), ("reversal", "reversal:example:3", "-0.50"))
    _pay(three, ("example", "example:4", "0.125"))
    out = tmp_path / "bonus.csv"
    call_command("export_payments", "--study", str(study.public_id), "--output", str(out))
    # 0.50 + 0.50 + 0.10 + 0.25 = 1.35 (the reward is Prolific's to pay); 0.125 rounds half-up to 0.13;
    # PID-TWO's net is 0: left out.
    assert out.read_text() == "PID-ONE,1.35\nPID-THREE,0.13\n"
    assert "2 worker(s); marked 6 ledger row(s) paid" in capsys.readouterr().err
    batch = PaymentBatch.objects.get()
    assert set(LedgerEntry.objects.filter(paid_at__isnull=False).values_list("event_key", flat=True)) == {
        "example:1",
        "example:2",
        "validation:1",
        "bonus:1:1",
        f"reward:{one.pk}",
        "example:4",
    }
    assert set(LedgerEntry.objects.filter(batch=batch).values_list("worker", flat=True)) == {
        one.user_id,
        three.user_id,
    }
    assert LedgerEntry.objects.filter(paid_at__isnull=True).count() == 2  # PID-TWO's rows wait
    again = export_payments(study=study)
    assert (again.content, again.n_entries) == ("", 0)
    assert LedgerEntry.objects.filter(batch=batch).count() == 6


def test_a_dry_run_marks_nothing(hate_round, owner, capsys):
    study = make_study(hate_round)
    _pay(enter_as(study, "PID-ONE").participation, ("example", "example:1", "0.50"))
    call_command("export_payments", "--study", str(study.public_id), "--dry-run")
    assert capsys.readouterr().out == "PID-ONE,0.50\n"
    assert LedgerEntry.objects.filter(paid_at__isnull=True).count() == 1
    assert PaymentBatch.objects.count() == 0


def test_mturk_send_bonus_csv(hate_round, owner):
    study = make_study(hate_round, platform="mturk", name="Hate HIT")
    ids = {k: v for k, v in MTURK_IDS.items() if k != "workerId"}
    p = enter_as(study, "A1WORKER", assignment_id=ids["assignmentId"], hit_id=ids["hitId"]).participation
    _pay(
        p,
        ("example", "example:1", "0.50"),
        ("example", "example:2", "0.50"),
        ("bonus", "bonus:1:1", "0.25"),
        ("reward", f"reward:{p.pk}", "2.00"),
    )
    export = export_payments(study=study)
    assert export.content == (
        "WorkerId,AssignmentId,BonusAmount,Reason\n"
        f'A1WORKER,{MTURK_IDS["assignmentId"]},1.25,"Bonus for Hate HIT: 1 bonus, 2 examples"\n'
    )
    assert LedgerEntry.objects.filter(paid_at__isnull=True).count() == 0  # the reward too (MTurk pays it)


def test_generic_csv_includes_the_reward(hate_round, owner):
    study = make_study(hate_round, platform="generic", completion_url="https://lab.example/done")
    p = enter_as(study, "p-1").participation
    _pay(p, ("example", "example:1", "0.125"), ("reward", f"reward:{p.pk}", "0.50"))
    assert export_payments(study=study).content == "participant_id,amount,currency,events\np-1,0.63,USD,2\n"


def test_the_admin_action_downloads_the_file(client, owner, password, hate_round):
    study = make_study(hate_round)
    _pay(enter_as(study, "PID-ONE").participation, ("example", "example:1", "0.50"))
    client.login(username=owner.username, password=password)
    response = client.post(
        "/admin/crowd/study/", {"action": "export_payments_action", "_selected_action": [study.pk]}
    )
    assert response.status_code == 200
    assert response.content == b"PID-ONE,0.50\n"
    assert LedgerEntry.objects.get().paid_at is not None


def test_an_id_a_spreadsheet_would_run_is_written_as_text(hate_round, owner):
    study = make_study(hate_round, platform="generic", completion_url="https://lab.example/done")
    _pay(enter_as(study, "=HYPERLINK(1)").participation, ("example", "example:1", "1"))
    assert export_payments(study=study).content.splitlines()[1] == "'=HYPERLINK(1),1.00,USD,1"


def test_a_second_export_with_nothing_to_pay_makes_no_batch(study, tmp_path, capsys):
    p = enter_as(study, "PID-E", session_id="e-1").participation
    LedgerEntry.objects.create(
        study=study, round=study.round, participation=p, worker=p.user, kind="example",
        event_key="example:1", amount=Decimal("0.50"), currency="GBP",
    )  # fmt: skip
    call_command("export_payments", "--study", str(study.public_id), "--output", str(tmp_path / "one.txt"))
    assert PaymentBatch.objects.count() == 1
    capsys.readouterr()
    call_command("export_payments", "--study", str(study.public_id), "--output", str(tmp_path / "two.txt"))
    assert PaymentBatch.objects.count() == 1
    assert "Nothing to pay." in capsys.readouterr().err
    assert not (tmp_path / "two.txt").exists()
