"""``manage.py import_qa_data``: SQuAD v1.1 (shared dev articles) as round 1 of the QA task."""

from __future__ import annotations

from annotation.importers.squad import SQUAD_DIR, import_squad

from ._round_import import RoundImportCommand


class Command(RoundImportCommand):
    help = (
        "Import SQuAD v1.1 (CC BY-SA 4.0) into the qa task: paragraphs as contexts, questions as "
        "validated examples with every reference answer and a split by article. Safe to re-run: "
        "nothing is added twice; skipped questions are listed."
    )
    task_slug = "qa"
    folder = SQUAD_DIR
    importer = staticmethod(import_squad)
