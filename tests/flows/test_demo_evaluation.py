"""The demo's evaluation step: round datasets built, every pair evaluated once, nothing on a second run."""

from __future__ import annotations

import pytest

from annotation.models import Example
from demo.setup import DemoReport, evaluate_demo
from leaderboards.models import Score

pytestmark = pytest.mark.django_db


def test_demo_evaluates_everything_once(hate_task, hate_round, tiny_registered_model, toy_dataset):
    Example.objects.bulk_create(
        Example(
            round=hate_round,
            inputs={"statement": f"they are rats {i}"},
            target="hateful",
            split=split,
            source=Example.Source.IMPORTED,
            status=Example.Status.VALIDATED_CORRECT,
            external_id=f"{split}-{i}",
        )
        for i, split in enumerate(["train", "dev", "test"] * 3)
    )
    lines = []
    report = DemoReport()
    evaluate_demo(hate_task, report, log=lines.append)
    # toy + round-1-dev (standard) + round-1-test (scoring); round-1-train is hidden: not evaluated
    assert report.evaluated == 3 and not report.evaluation_failures
    assert set(Score.objects.values_list("status", flat=True)) == {Score.Status.DONE}
    assert sorted(Score.objects.values_list("dataset__slug", flat=True)) == [
        "round-1-dev",
        "round-1-test",
        "toy",
    ]
    # The scoring datasets (toy, round-1-test) first: the leaderboard fills before the dev split.
    evaluated = [line.rsplit(" on ", 1)[1].split(":")[0] for line in lines if "/3] " in line]
    assert evaluated == ["toy", "round-1-test", "round-1-dev"]
    again = DemoReport()
    evaluate_demo(hate_task, again, log=lines.append)
    assert again.evaluated == 0
