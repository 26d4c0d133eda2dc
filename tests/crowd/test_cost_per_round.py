"""Cost per round (tasks.round_stats over Round.ledger_entries): hand-computed figures, in the round API
and on the task page with its chart."""

from __future__ import annotations

from decimal import Decimal

import pytest

from crowd.models import LedgerEntry
from tasks.round_stats import round_counts, round_counts_for_task
from tasks.services import ensure_round
from tests.factories.annotation import make_example
from tests.factories.crowd import enter_as, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def paid_round(hate_round, owner, annotator):
    """Round 1: 4 collected examples (1 verified model-fooling, 1 flagged, 1 validated incorrect, 1
    pending), plus a retracted and an imported one that count nowhere; 12.60 GBP in the ledger (13.10
    paid, 0.50 reversed)."""
    make_example(hate_round, annotator, status="validated_correct", model_wrong=True)
    make_example(hate_round, annotator, status="flagged")
    make_example(hate_round, annotator, status="validated_incorrect")
    make_example(hate_round, annotator)
    make_example(hate_round, annotator, is_retracted=True, status="validated_correct")
    make_example(hate_round, annotator, source="imported", status="validated_correct")
    study = make_study(hate_round)
    p = enter_as(study, "PID").participation
    for key, amount in (("example:1", "10.00"), ("reward:1", "3.10"), ("reversal:example:1", "-0.50")):
        LedgerEntry.objects.create(
            study=study,
            round=hate_round,
            participation=p,
            worker=p.user,
            kind=key.split(":")[0],
            event_key=key,
            amount=Decimal(amount),
            currency="GBP",
        )
    return hate_round


def test_cost_figures_by_hand(paid_round):
    cost = round_counts(paid_round).cost
    assert cost.currency == "GBP"
    assert cost.total == Decimal("12.60")
    assert cost.per_collected == Decimal("3.15")  # 12.60 / 4 collected
    assert cost.per_validated == Decimal("4.20")  # 12.60 / 3 settled (correct, flagged, incorrect)
    assert cost.per_verified_fooling == Decimal("12.60")  # 12.60 / 1


def test_a_round_without_pay_has_no_cost(hate_round, hate_task):
    [counts] = round_counts_for_task(hate_task)
    assert (counts.cost, counts.costs) == (None, ())


def test_several_currencies_are_listed_apart(paid_round, owner):
    study = make_study(paid_round, platform="mturk", name="HIT")
    p = enter_as(study, "W1").participation
    LedgerEntry.objects.create(
        study=study, round=paid_round, participation=p, worker=p.user, kind="example",
        event_key="example:9", amount=Decimal("1"), currency="USD",
    )  # fmt: skip
    counts = round_counts(paid_round)
    assert counts.cost is None
    assert [(c.currency, c.total) for c in counts.costs] == [("GBP", Decimal("12.60")), ("USD", Decimal("1"))]


def test_the_round_api_shows_the_cost(api, paid_round):
    body = api(None).get("/api/tasks/hate-speech/rounds/1/").json()["statistics"]
    assert body["cost"] == {
        "currency": "GBP",
        "total": "12.60",
        "per_collected": "3.15",
        "per_validated": "4.20",
        "per_verified_fooling": "12.60",
    }
    assert body["costs"] == [body["cost"]]


def test_the_round_api_cost_is_null_without_pay_and_per_figures_null_without_counts(
    api, hate_task, paid_round
):
    ensure_round(task=hate_task, number=2)
    rounds = api(None).get("/api/tasks/hate-speech/rounds/").json()["results"]
    by_number = {r["number"]: r["statistics"] for r in rounds}
    assert (by_number[2]["cost"], by_number[2]["costs"]) == (None, [])


def test_the_task_page_shows_the_cost_column_and_chart(client, paid_round):
    page = client.get("/tasks/hate-speech/")
    assert "12.60 GBP" in page.text
    assert "12.60 per verified model-fooling" in page.text
    assert "Crowd cost per verified model-fooling example" in page.text
    assert "GBP 1: 12.60</title>" in page.text  # the chart's point


def test_the_cost_chart_geometry_by_hand():
    from tasks.charts import amount_chart

    chart = amount_chart(["1", "2", "3"], [12.6, None, 3.0], unit="GBP")
    # Top gridline: 20 (the next 1, 2 or 5 times a power of ten above 12.60).
    # y = 28 + (1 - v / 20) * (240 - 28 - 44): 12.60 → 90.16, 3.00 → 170.8; x = 48 + (i + 0.5) * 416 / 3.
    [first, third] = chart.points["GBP"]
    assert (round(first.x, 2), round(first.y, 2), first.value) == (117.33, 90.16, 12.6)
    assert (round(third.x, 2), round(third.y, 2), third.value) == (394.67, 170.8, 3.0)
    assert ">20.00</text>" in chart.svg and ">5.00</text>" in chart.svg and "%" not in chart.svg
