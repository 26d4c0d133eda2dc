"""Round statistics by hand (MER, vMER, retracted, flagged, median time), the counts of ``small_round``
(tests/annotation/conftest.py: an unscored example and imported ones left out of MER, every round of the
task listed), and the task page showing them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Example
from tasks import round_stats
from tasks.services import ensure_round

S = Example.Status


def _example(round_, *, wrong, status=S.PENDING, ms=None, **extra):
    return Example.objects.create(
        round=round_,
        inputs={"statement": "s"},
        target="hateful",
        model_wrong=wrong,
        status=status,
        time_taken_ms=ms,
        **extra,
    )


@pytest.fixture
def six_examples(hate_round):
    """6 collected (3 fooling, 1 of them verified), 1 retracted, 1 imported; times 1-5 s and one unknown."""
    _example(hate_round, wrong=True, status=S.VALIDATED_CORRECT, ms=1000)
    _example(hate_round, wrong=True, ms=3000)
    _example(hate_round, wrong=True, status=S.FLAGGED, ms=2000)
    _example(hate_round, wrong=False, status=S.VALIDATED_INCORRECT, ms=5000, is_flagged_by_annotator=True)
    _example(hate_round, wrong=False)
    _example(hate_round, wrong=False, status=S.VALIDATED_CORRECT, ms=4000)
    # Neither of these is collected: a retracted (verified!) fooling example and an imported one.
    _example(hate_round, wrong=True, status=S.VALIDATED_CORRECT, ms=10, is_retracted=True)
    _example(hate_round, wrong=True, status=S.VALIDATED_CORRECT, ms=10, source=Example.Source.IMPORTED)
    return hate_round


def test_statistics_by_hand(six_examples):
    c = round_stats.round_counts(six_examples)
    assert (c.collected, c.fooling, c.verified) == (6, 3, 1)
    assert c.mer == pytest.approx(3 / 6)
    assert c.vmer == pytest.approx(1 / 6)
    assert (c.retracted, c.imported) == (1, 1)
    assert c.flagged == 2  # settled flagged + flagged by its author
    assert c.median_time_ms == 3000  # of 1, 3, 2, 5, 4 s; the unknown time, retracted and imported left out
    assert c.median_time_s == 3.0


def test_flagged_both_ways_counts_once(hate_round):
    _example(hate_round, wrong=True, status=S.FLAGGED, is_flagged_by_annotator=True)
    assert round_stats.round_counts(hate_round).flagged == 1


def test_median_of_even_count_and_empty():
    assert round_stats.median([4, 1, 3, 2]) == 2.5
    assert round_stats.median([]) is None


def test_empty_round_has_no_rates(hate_round):
    c = round_stats.round_counts(hate_round)
    assert (c.collected, c.mer, c.vmer, c.median_time_ms) == (0, None, None, None)


def test_round_counts_and_mer_by_hand(small_round):
    counts = round_stats.round_counts(small_round)
    assert (counts.collected, counts.scored, counts.fooling, counts.unscored) == (5, 4, 2, 1)
    assert counts.mer == pytest.approx(2 / 4)


def test_imported_examples_are_counted_apart_and_stay_out_of_mer(small_round):
    for i, label in enumerate(["hateful", "not-hateful", "hateful"]):
        Example.objects.create(
            round=small_round,
            inputs={"statement": f"imported {i}"},
            target=label,
            source=Example.Source.IMPORTED,
            status=Example.Status.VALIDATED_CORRECT,
            prediction_status=Example.PredictionStatus.NONE,
            external_id=f"imp-{i}",
        )
    counts = round_stats.round_counts(small_round)
    assert (counts.collected, counts.fooling, counts.unscored, counts.imported) == (5, 2, 1, 3)
    assert counts.mer == pytest.approx(2 / 4)


def test_round_counts_for_task_lists_every_round(hate_task, small_round):
    ensure_round(task=hate_task, number=2)
    rows = round_stats.round_counts_for_task(hate_task)
    assert [(r.round.number, r.collected, r.fooling) for r in rows] == [(1, 5, 2), (2, 0, 0)]
    assert rows[1].mer is None


def test_task_statistics_take_four_queries_whatever_the_rounds(hate_task, six_examples):
    for n in (2, 3, 4):
        _example(ensure_round(task=hate_task, number=n), wrong=True, ms=n)
    with CaptureQueriesContext(connection) as queries:
        rows = round_stats.round_counts_for_task(hate_task)
    # counts, median times, verdicts for the agreement, crowd ledger totals (none: no settled count)
    assert len(queries) == 4
    assert [r.round.number for r in rows] == [1, 2, 3, 4]
    assert [r.median_time_ms for r in rows] == [3000, 2, 3, 4]


def test_task_page_shows_statistics_and_the_plot(client, hate_task, six_examples):
    imported = ensure_round(task=hate_task, number=2)
    _example(imported, wrong=True, status=S.VALIDATED_CORRECT, source=Example.Source.IMPORTED)
    live = ensure_round(task=hate_task, number=3)
    _example(live, wrong=True, status=S.VALIDATED_CORRECT)
    _example(live, wrong=False)

    response = client.get(reverse("tasks:detail", args=[hate_task.slug]))
    assert response.status_code == 200
    text = response.text
    row1 = response.context["round_counts"][0]
    assert (row1.collected, row1.fooling, row1.verified, row1.flagged) == (6, 3, 1, 2)
    assert "vMER" in text and "Median time" in text and "3.0 s" in text
    chart = response.context["mer_chart"]
    # Round 2 is imported only: no point (not 0) for either series.
    assert [p.label for p in chart.points["MER"]] == ["1", "3"]
    assert [p.label for p in chart.points["vMER"]] == ["1", "3"]
    assert [p.value for p in chart.points["vMER"]] == pytest.approx([1 / 6, 1 / 2])
    assert "<svg" in text and text.count('<circle class="point"') == 4
    assert "<script" not in text


def test_task_page_without_live_rounds_says_nothing_to_plot(client, hate_task, hate_round):
    _example(hate_round, wrong=True, source=Example.Source.IMPORTED, status=S.VALIDATED_CORRECT)
    response = client.get(reverse("tasks:detail", args=[hate_task.slug]))
    assert response.context["mer_chart"].is_empty
    assert "Nothing to plot yet" in response.text and "<svg" not in response.text
