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
# Run alone, the export peaks at 24.9 MiB. After an in-process training run (e.g. test_admin.py's
# test_train_next_round_target_form_then_job) the same export peaks at 43-45 MiB, and at 53-55 MiB in the
# full suite: state left by training, not rows piling up (the peak is the same for JSONL and CSV, and the
# cyclic collector makes no difference). Until that is explained the bound sits above it; an export that
# loaded its 50,000 rows would need several hundred MiB.
MEMORY_BOUND_MB = 64
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
    model = RegisteredModel.objects.create(task=hate_task, name="bulk-model", status="ready")
    metadata = {"dataset": "bulk", "note": "long metadata 🐀 " * 20, "pairs": list(range(10))}
    for start in range(0, N_EXAMPLES, BATCH):
        examples = Example.objects.bulk_create(
            Example(
                round=hate_round,
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


def test_export_50000_examples_under_a_memory_bound(hate_task, many_examples, capsys):
    """Both formats over the same 50,000 rows (built once: the set-up is most of the test's time)."""
    for fmt in ("jsonl", "csv"):
        sink = CountingSink(fmt)
        tracemalloc.start()
        try:
            written = write_export(sink, hate_task, fmt=fmt)  # the default chunk size
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert written == many_examples
        peak_mb = peak / 2**20
        with capsys.disabled():
            print(
                f"\n{fmt}: {written:,} examples, {sink.chars / 2**20:.0f} MiB of text, peak {peak_mb:.1f} MiB"
            )
        assert peak_mb < MEMORY_BOUND_MB, f"{fmt}: peak {peak_mb:.1f} MiB"
