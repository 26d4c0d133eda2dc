"""Exporting 50,000 examples stays under a fixed memory bound (rows are streamed, not loaded)."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from annotation.exports import write_export
from annotation.models import Example, Prediction
from models_registry.models import RegisteredModel
from validation.models import Validation

N_EXAMPLES = 50_000
# Run alone, the export of 50,000 rows peaks at 24.9 MiB and that of round 1's 5,000 at 23.4. Later in
# a run, after in-process training and model loads, the peaks are higher and grow with the rows: 44.1 ->
# 55.3 MiB after the annotation tests, 46.7 -> 64.5 and 33.1 -> 65.9 in two CI runs of the full suite.
# State the earlier tests left that each row touches (the peak is the same for JSONL and CSV); not yet
# explained. Loaded instead of streamed, the 45,000 more rows would cost several hundred MiB more, so
# the bound on the growth sits above what was seen and well below that.
GROWTH_BOUND_MB = 64
BATCH = 5_000


class CountingSink:
    """A text stream that keeps nothing: counts characters, lines and checks each JSON line parses."""

    def __init__(self, fmt: str):
        self.fmt = fmt
        self.chars = 0
        self.pieces = 0

    def write(self, piece: str) -> None:
        self.chars += len(piece)
        self.pieces += 1
        if self.fmt == "jsonl" and self.pieces % 10_000 == 1:
            json.loads(piece)


@pytest.fixture
def many_examples(hate_task, hate_round, annotator, validator):
    """50,000 examples: the first 5,000 in round 1, the rest in round 2."""
    from tasks.models import Round

    second = Round.objects.create(task=hate_task, number=2)
    model = RegisteredModel.objects.create(task=hate_task, name="bulk-model", status="ready")
    metadata = {"dataset": "bulk", "note": "long metadata 🐀 " * 20, "pairs": list(range(10))}
    for start in range(0, N_EXAMPLES, BATCH):
        examples = Example.objects.bulk_create(
            Example(
                round=hate_round if start == 0 else second,
                annotator=annotator if i % 2 else None,
                inputs={
                    "statement": f"statement {i}: they are 🐀 and\nshould go back 👨🏿\u200d❤️\u200d👨🏻 " * 2
                },
                target="hateful" if i % 3 else "not-hateful",
                model_wrong=bool(i % 2),
                metadata=metadata,
                tags=["bulk"],
                external_id=f"bulk-{i}",
            )
            for i in range(start, start + BATCH)
        )
        Prediction.objects.bulk_create(
            Prediction(
                example=e,
                model=model,
                label="hateful",
                output={"label": "hateful", "probabilities": {"hateful": 0.7, "not-hateful": 0.3}},
                model_wrong=e.model_wrong,
            )
            for e in examples
        )
        Validation.objects.bulk_create(
            Validation(example=e, validator=validator, verdict="correct") for e in examples[::10]
        )
    return N_EXAMPLES


def _peak_mb(task, fmt: str, rounds=None) -> tuple[int, float, CountingSink]:
    sink = CountingSink(fmt)
    tracemalloc.start()
    try:
        written = write_export(sink, task, rounds, fmt=fmt)  # the default chunk size
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return written, peak / 2**20, sink


def test_export_50000_examples_under_a_memory_bound(hate_task, hate_round, many_examples, capsys):
    """Both formats over the same rows (built once: the set-up is most of the test's time)."""
    for fmt in ("jsonl", "csv"):
        _peak_mb(hate_task, fmt, [hate_round])  # warm-up: first-use caches are not the rows' cost
        few, small, _ = _peak_mb(hate_task, fmt, [hate_round])
        written, large, sink = _peak_mb(hate_task, fmt)
        assert (few, written) == (BATCH, many_examples)
        with capsys.disabled():
            print(
                f"\n{fmt}: {written:,} examples, {sink.chars / 2**20:.0f} MiB of text, peak {large:.1f} MiB "
                f"({few:,} examples: {small:.1f} MiB)"
            )
        assert large - small < GROWTH_BOUND_MB, (
            f"{fmt}: peak {small:.1f} MiB for {few:,}, {large:.1f} for {written:,}"
        )
