"""What a crowd study costs the platform: entry, writes and verdicts with the pay ledger, recount, export.

Run:  .venv/bin/python benchmarks/crowd_study.py [--participants 200] [--database-url URL]

On a throwaway PostgreSQL test database (created and dropped), a Prolific study on hate-speech round 1
(5 examples and 10 validations per submission, quorum 2, a quiz, a daily cap):

  * entry:      GET of the entry link through Django's full stack (key check, account, participation,
                log-in, redirect), one new participant each;
  * write:      ``annotation.services.create_example`` for a participant of the study and, beside it, for
                a volunteer outside any study, with SQL statements per call: the difference is what
                the qualification rule, the signals and the ledger add;
  * validate:   ``validation.services.submit_validation`` the same way, on an example served to the voter
                first (its claim, made outside the timing: a vote counts only on what was served);
  * recount:    ``manage.py recount_ledger`` over the whole study (it must add nothing);
  * export:     ``manage.py export_payments`` for every participant (Prolific's bulk-bonus file).

The target model is a deterministic stand-in (``tests.helpers.fakes.rule_predict``): this measures the
platform's crowd bookkeeping, not the forward (``benchmarks/create_latency.py`` measures that).
Prints p50/p95 in milliseconds, statements per call, seconds and rows for the bulk commands.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.create_latency import percentile  # noqa: E402
from benchmarks.throwaway_database import run_on_throwaway_database  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--participants", type=int, default=200, help="participants in the study (default 200)"
    )
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_bench")
    args = parser.parse_args()

    run_on_throwaway_database(args.database_url, lambda: run(args))


def _timed(call) -> tuple[float, int, object]:
    """(milliseconds, SQL statements, result) of one call."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    connection.queries_log.clear()  # the log keeps 9,000 statements; counting by index needs room
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        result = call()
        elapsed = (time.perf_counter() - start) * 1000
    return elapsed, len(queries), result


def _row(name: str, values: list[float], statements: list[int]) -> str:
    return (
        f"{name:22}{percentile(values, 50):9.1f}{percentile(values, 95):9.1f}"
        f"{statistics.fmean(statements):12.1f}"
    )


def run(args) -> None:
    from decimal import Decimal

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from annotation.models import Example
    from annotation.services import create_example
    from crowd.models import LedgerEntry, Participation, Study
    from models_registry import inference
    from tasks.models import Quiz, QuizQuestion, TaskWorker
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round
    from tests.factories.models_registry import make_stand_in
    from tests.factories.validation import serve
    from tests.helpers.fakes import rule_predict
    from validation.services import submit_validation

    inference.predict = rule_predict  # the stand-in target: no forward in these figures
    task = ensure_builtin_task("hate-speech")
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    make_stand_in(task, round_)
    task.validation_quorum = 2
    task.daily_example_cap = 50
    task.save()
    quiz = Quiz.objects.create(task=task, pass_mark=1.0)
    QuizQuestion.objects.create(quiz=quiz, text="Is it hateful?", choices=["yes", "no"], answer="yes")
    study = Study.objects.create(
        round=round_,
        name="benchmark",
        platform="prolific",
        examples_required=5,
        validations_required=10,
        reward=Decimal("1.00"),
        pay_per_example=Decimal("0.30"),
        pay_per_validation=Decimal("0.05"),
        bonus_per_verified_fooling=Decimal("0.30"),
        max_participants=args.participants,
        completion_code="BENCH",
        consent_text="I agree.",
    )

    entry_ms, entry_sql, users = [], [], []
    for n in range(args.participants):
        query = urlencode(
            {"key": study.entry_key, "PROLIFIC_PID": f"pid{n:06d}", "STUDY_ID": "s", "SESSION_ID": f"x{n}"}
        )
        client = Client()
        ms, sql, response = _timed(
            lambda client=client, query=query: client.get(f"/study/{study.public_id}/enter/?{query}")
        )
        if response.status_code != 302:
            raise SystemExit(f"entry answered {response.status_code}")
        entry_ms.append(ms)
        entry_sql.append(sql)
    users = [p.user for p in Participation.objects.select_related("user").order_by("id")]
    # Onboarded and consented as the pages would leave them (the quiz and consent pages are not timed).
    Participation.objects.filter(study=study).update(consented_at=study.created_at)
    for user in users:
        TaskWorker.objects.update_or_create(
            task=task, user=user, defaults={"quiz_passed_at": study.created_at}
        )
    volunteer = get_user_model().objects.create_user("volunteer")
    TaskWorker.objects.create(task=task, user=volunteer, quiz_passed_at=study.created_at)

    # Statements without "hate" fool the stand-in (it answers hateful only when it sees "hate").
    write_ms, write_sql, free_ms, free_sql = [], [], [], []
    for i, user in enumerate(users):
        for j in range(5):
            ms, sql, _ = _timed(
                lambda user=user, i=i, j=j: create_example(
                    task=task,
                    annotator=user,
                    inputs={"statement": f"they are vermin {i}-{j}"},
                    target="hateful",
                )
            )
            write_ms.append(ms)
            write_sql.append(sql)
        if i < 50:
            ms, sql, _ = _timed(
                lambda i=i: create_example(
                    task=task, annotator=volunteer, inputs={"statement": f"go away {i}"}, target="hateful"
                )
            )
            free_ms.append(ms)
            free_sql.append(sql)

    # Each participant validates ten examples of the next participants (two votes settle each).
    validate_ms, validate_sql = [], []
    examples = list(
        Example.objects.filter(annotator__in=users).order_by("id").values_list("id", "annotator_id")
    )
    by_author: dict[int, list[int]] = {}
    for pk, author in examples:
        by_author.setdefault(author, []).append(pk)
    ids = [u.pk for u in users]
    for k, user in enumerate(users):
        targets = by_author[ids[(k + 1) % len(ids)]] + by_author[ids[(k + 2) % len(ids)]]
        for pk in targets:
            example = Example.objects.get(pk=pk)
            serve(example, user)
            ms, sql, _ = _timed(
                lambda example=example, user=user: submit_validation(
                    example=example, validator=user, verdict="correct"
                )
            )
            validate_ms.append(ms)
            validate_sql.append(sql)
    volunteer_votes_ms, volunteer_votes_sql = [], []
    for pk in list(Example.objects.filter(annotator=volunteer).values_list("id", flat=True))[:50]:
        example = Example.objects.get(pk=pk)
        serve(example, users[0])
        ms, sql, _ = _timed(
            lambda example=example: submit_validation(
                example=example, validator=users[0], verdict="incorrect", corrected_label="not-hateful"
            )
        )
        volunteer_votes_ms.append(ms)
        volunteer_votes_sql.append(sql)

    rows_before = LedgerEntry.objects.count()
    start = time.perf_counter()
    call_command("recount_ledger", "--study", str(study.public_id), stdout=io.StringIO())
    recount_s = time.perf_counter() - start
    added = LedgerEntry.objects.count() - rows_before

    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"crowd-bench-{os.getpid()}.csv"
    start = time.perf_counter()
    call_command(
        "export_payments", "--study", str(study.public_id), "--output", str(out), stdout=io.StringIO()
    )
    export_s = time.perf_counter() - start
    lines = out.read_text().splitlines()
    out.unlink()

    print(
        f"participants: {len(users)}, examples: {Example.objects.count()}, ledger rows: {LedgerEntry.objects.count()}"
    )
    print(f"{'':22}{'p50 ms':>9}{'p95 ms':>9}{'statements':>12}")
    print(_row("entry link (page)", entry_ms, entry_sql))
    print(_row("write, in a study", write_ms, write_sql))
    print(_row("write, volunteer", free_ms, free_sql))
    print(_row("vote, in a study", validate_ms, validate_sql))
    print(_row("vote, outside study*", volunteer_votes_ms, volunteer_votes_sql))
    print("  * by a participant past the study's 10 verdicts: the ledger is read, nothing paid")
    print(f"recount_ledger: {recount_s:.2f} s over {rows_before} rows, added {added} (must be 0)")
    print(f"export_payments: {export_s:.2f} s, {len(lines)} lines")


if __name__ == "__main__":
    main()
