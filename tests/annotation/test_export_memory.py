"""Exporting 20,000 examples stays under a fixed memory bound (rows are streamed, not loaded)."""

from __future__ import annotations

import gc
import json

import pytest

from annotation.exports import write_export
from annotation.models import Example, Prediction
from models_registry.models import RegisteredModel
from validation.models import Validation

N_EXAMPLES = 20_000
# The memory is the process's resident set: its high-water mark (VmHWM, reset through
# /proc/self/clear_refs) above what was resident before the export. tracemalloc would count Python's
# allocations exactly but makes the export several times slower (about 150 s for this test, against
# 30). Measured with 50,000 rows, run alone: their export grew the resident set by 4.9 MiB (JSONL) and
# 5.9 MiB (CSV), that of round 1's 5,000 by 4.9 and 3.9, and the same 50,000 rows put in a list first by
# 260.6 MiB, about 5.2 KiB a row. Here 20,000 rows (the set-up is most of the test's time): streamed,
# the export of the 15,000 more than round 1's grows it by a few MiB at most; loaded, by about 78 MiB.
# The bound sits well above the first and well below the second.
GROWTH_BOUND_MB = 32
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
    """20,000 examples: the first 5,000 in round 1, the rest in round 2."""
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


def _status_kib(field: str) -> int:
    """A size line of /proc/self/status (``VmRSS``, ``VmHWM``), in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(f"no {field} in /proc/self/status")


def _peak_mb(task, fmt: str, rounds=None) -> tuple[int, float, CountingSink]:
    """Export into a counting sink: (examples written, MiB the resident set peaked above its start, sink)."""
    sink = CountingSink(fmt)
    gc.collect()
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # the high-water mark starts again from what is resident now
    written = write_export(sink, task, rounds, fmt=fmt)  # the default chunk size
    return written, (_status_kib("VmHWM") - before) / 1024, sink


def test_export_20000_examples_under_a_memory_bound(hate_task, hate_round, many_examples, capsys):
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
