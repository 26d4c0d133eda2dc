"""Rows PostgreSQL has read from a table so far in the current transaction, from its own counters
(``pg_stat_xact_user_tables``): what a query costs in rows, whatever plan it took. For the tests and
benchmarks that bound what one request reads."""

from __future__ import annotations

from django.db import connection


def example_rows_read() -> int:
    """Rows of ``annotation_example`` read so far in this transaction, by sequential scans and index
    fetches. PostgreSQL only."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables"
            " WHERE relname = 'annotation_example'"
        )
        return cursor.fetchone()[0]
