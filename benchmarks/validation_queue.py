"""A validator's next example as a round's open examples grow: does serving read the round?

Run:  .venv/bin/python benchmarks/validation_queue.py [--sizes 1000,4000,16000] [--asks 50]
                                                      [--database-url postgres://postgres@127.0.0.1:5432/dynabench]

On a throwaway PostgreSQL database (``benchmarks/throwaway_database.py``): the hate-speech task's round 1,
grown to each of ``--sizes`` open (model-fooling, pending) examples, one in four of them already validated
once by another validator, and the table analyzed. For each size, ``--asks`` times (the validator's claims
dropped in between, so each ask serves afresh):
  - ``next_example``: the service behind the validate page and ``GET .../validations/next/``
    (``validation.services._first_of_queue``: a walk from a random queue key among examples nobody has
    validated);
  - the whole queue ordered by count, as ``next_example`` served before (``selectors.queue_for``,
    locked, first row): what is left when no example is fresh;
and prints the median and p95 wall time of each (ms, loopback PostgreSQL, this process's Python included)
and the example rows PostgreSQL read for one ask (its own counters, ``pg_stat_xact_user_tables``).
Then, at the largest size with every open example validated once (nothing fresh: the walk finds nothing
and the queue is ordered by count), ``next_example`` again; last, with 200 new examples on top (a round
being written: the old ones validated once, the new ones fresh).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,4000,16000")
    parser.add_argument("--asks", type=int, default=50)
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dynabench"),
        help="the PostgreSQL server (its test_ database is made and dropped)",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    from benchmarks.throwaway_database import run_on_throwaway_database

    run_on_throwaway_database(args.database_url, lambda: measure(sizes, args.asks))


def _timed(ask, asks: int) -> tuple[float, float, int]:
    """(median ms, p95 ms, example rows read by the last ask) of ``asks`` calls of ``ask``, each in its
    own transaction, the validator's claims dropped first."""
    from django.db import transaction

    from tests.helpers.rows_read import example_rows_read
    from validation.models import ValidationClaim

    times, read = [], 0
    for _ in range(asks):
        ValidationClaim.objects.all().delete()
        with transaction.atomic():
            before = example_rows_read()
            started = time.perf_counter()
            served = ask()
            times.append((time.perf_counter() - started) * 1000)
            read = example_rows_read() - before
        assert served is not None, "nothing served"
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], read


def _written(round_, writer, statements: list[str]) -> list:
    """Open examples of ``round_`` by ``writer``, one per statement, model-fooling and pending, in one
    insert (each with its own random queue key)."""
    from annotation.models import Example

    return Example.objects.bulk_create(
        Example(
            round=round_,
            annotator=writer,
            inputs={"statement": statement},
            target="hateful",
            model_wrong=True,
            status=Example.Status.PENDING,
        )
        for statement in statements
    )


def measure(sizes: list[int], asks: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import Example
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round
    from validation import selectors
    from validation.models import Validation
    from validation.services import next_example

    task = ensure_builtin_task("hate-speech")
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    User = get_user_model()
    writer = User.objects.create_user("queue-writer")
    other = User.objects.create_user("queue-other-validator")
    validator = User.objects.create_user("queue-validator")
    print(
        f"validation queue: hate-speech round 1, one in four open examples validated once; {asks} asks each"
    )

    def whole_queue():
        """The one query that served before: the whole queue ordered by count, its first row locked."""
        return (
            selectors.queue_for(round_, validator).select_for_update(skip_locked=True, of=("self",)).first()
        )

    def report(label: str, whole: bool = True) -> None:
        """Analyze the tables, time ``next_example`` (and the whole queue) and print one line."""
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE annotation_example; ANALYZE validation_validation")
        new = _timed(lambda: next_example(round_=round_, validator=validator), asks)
        line = (
            f"{label}: next_example median {new[0]:.2f} ms, p95 {new[1]:.2f} ms, {new[2]} example rows read"
        )
        if whole:
            old = _timed(whole_queue, asks)
            line += (
                f"; the whole queue by count median {old[0]:.2f} ms, p95 {old[1]:.2f} ms, {old[2]} rows read"
            )
        print(line)

    grown = 0
    for size in sizes:
        made = _written(round_, writer, [f"open example {n}" for n in range(grown, size)])
        Validation.objects.bulk_create(
            Validation(example=example, validator=other, verdict=Validation.Verdict.CORRECT)
            for example in made[::4]
        )
        grown = size
        report(f"{size:>6} open examples")
    # The case the walk cannot help: no example is fresh, so both walks read every pending example
    # before the whole queue is ordered by count.
    Validation.objects.bulk_create(
        Validation(example=example, validator=other, verdict=Validation.Verdict.CORRECT)
        for example in Example.objects.filter(round=round_).exclude(validations__isnull=False)
    )
    report(f"{grown:>6} open examples, every one validated once")
    # A round being written: those old examples validated once, and new ones nobody has validated yet.
    _written(round_, writer, [f"new example {n}" for n in range(200)])
    report(f"{grown:>6} open examples validated once and 200 new ones", whole=False)


if __name__ == "__main__":
    main()
