"""The task page's crowd cost column: the four figures of the round API (total, per collected, per
validated, per verified model-fooling) with the currency; "–" for a round without ledger rows, and a
0.00 total (rows that cancel out) kept as a real figure. Figures computed by hand."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from crowd.models import LedgerEntry
from tasks.services import ensure_round, set_current_round
from tests.factories.annotation import make_example
from tests.factories.crowd import enter_as, make_study

pytestmark = pytest.mark.django_db


def _pay(round_, participant_id: str, amounts: list[str]) -> None:
    # A study takes participants while its round collects (docs/crowd.md): round_ is made current first,
    # which ends the previous round's study; with no reward, that adds no row.
    set_current_round(task=round_.task, round_=round_)
    study = make_study(round_, name=f"Study of round {round_.number}", reward=Decimal("0"))
    p = enter_as(study, participant_id).participation
    for n, amount in enumerate(amounts):
        LedgerEntry.objects.create(
            study=study, round=round_, participation=p, worker=p.user, kind="example",
            event_key=f"example:{round_.number}{n}", amount=Decimal(amount), currency="GBP",
        )  # fmt: skip


def _cost_cells(html: str) -> list[str]:
    """The text of each round's cost cell, in the table's order, tags as " | "."""
    cells = re.findall(r'<td class="cost">(.*?)</td>', html, flags=re.S)
    return [" | ".join(part for part in re.split(r"<[^>]+>", cell) if part.strip()) for cell in cells]


def test_the_cost_cell_shows_the_four_figures_or_a_dash(client, hate_task, hate_round, annotator):
    # Round 1: 3 collected (1 verified model-fooling, 1 validated incorrect, 1 pending), so 2 settled;
    # 5.00 + 1.00 - 0.50 = 5.50 GBP: 5.50 / 3 = 1.833.. -> 1.83, 5.50 / 2 = 2.75, 5.50 / 1 = 5.50.
    make_example(hate_round, annotator, status="validated_correct")
    make_example(hate_round, annotator, status="validated_incorrect")
    make_example(hate_round, annotator)
    _pay(hate_round, "PID1", ["5.00", "1.00", "-0.50"])
    # Round 2: paid and reversed, no examples: a 0.00 total, and no count to divide by.
    _pay(ensure_round(task=hate_task, number=2), "PID2", ["0.50", "-0.50"])
    # Round 3: no ledger rows at all.
    ensure_round(task=hate_task, number=3)

    cells = _cost_cells(client.get("/tasks/hate-speech/").content.decode())
    assert cells == [
        "5.50 GBP | 1.83 per collected | 2.75 per validated | 5.50 per verified model-fooling",
        "0.00 GBP | – per collected | – per validated | – per verified model-fooling",
        "–",
    ]
