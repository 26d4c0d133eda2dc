"""``manage.py import_nli_data``: ANLI rounds 1-3 as rounds 1-3 of the NLI task."""

from __future__ import annotations

from annotation.importers.anli import import_anli

from ._round_import import RoundImportCommand


class Command(RoundImportCommand):
    help = (
        "Import ANLI v0.1 (rounds 1-3, CC BY-NC 4.0) into the nli task: premises as contexts, "
        "examples with their split. Safe to re-run: nothing is added twice; skipped rows are listed."
    )
    task_slug = "nli"
    folder = "anli"
    importer = staticmethod(import_anli)
