"""``manage.py export_payments --study <uuid> [--output FILE] [--dry-run]``: write what a study owes in the
platform's bulk format and mark those ledger rows paid (``crowd.payments.export_payments``; formats in its
docstring and docs/crowd.md). ``--dry-run`` prints the file and marks nothing. With nothing unpaid it says "Nothing to pay." and
writes no file (and records no payment batch)."""

from __future__ import annotations

import uuid

from django.core.management.base import CommandError

from core.audit import OperatorCommand
from crowd.models import Study
from crowd.payments import export_payments


class Command(OperatorCommand):  # --actor: who is recorded in the audit log
    help = "Export a study's unpaid pay in the platform's bulk format and mark it paid."

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="The study's public id (uuid).")
        parser.add_argument("--output", help="Write the file here (default: standard output).")
        parser.add_argument("--dry-run", action="store_true", help="Show the file; mark nothing paid.")

    def handle(self, *args, study, output=None, dry_run=False, **options):
        try:
            found = Study.objects.get(public_id=uuid.UUID(study))
        except (ValueError, Study.DoesNotExist):
            raise CommandError(f"No study with the id {study!r}.") from None
        export = export_payments(study=found, dry_run=dry_run)
        if not export.n_entries:
            self.stderr.write("Nothing to pay.")
            return
        if output:
            with open(output, "w", encoding="utf-8", newline="") as fh:
                fh.write(export.content)
        else:
            self.stdout.write(export.content, ending="")
        what = "would mark" if dry_run else "marked"
        self.stderr.write(f"{export.n_workers} worker(s); {what} {export.n_entries} ledger row(s) paid")
