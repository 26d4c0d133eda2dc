"""``manage.py import_sentiment_data``: DynaSent rounds 1-2 as rounds 1-2 of the sentiment task."""

from __future__ import annotations

from annotation.importers.dynasent import import_dynasent

from ._round_import import RoundImportCommand


class Command(RoundImportCommand):
    help = (
        "Import DynaSent (rounds 1-2) into the sentiment task: examples with their split, round 2's "
        "prompt sentences as contexts. Safe to re-run: nothing is added twice; skipped rows are listed."
    )
    task_slug = "sentiment"
    folder = "dynasent"
    importer = staticmethod(import_dynasent)
