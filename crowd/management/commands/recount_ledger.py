"""``manage.py recount_ledger [--study <uuid>]``: rebuild missing ledger rows from the stored examples,
verdicts and participations (``crowd.ledger.reconcile_participation``). Idempotent: a second run adds
nothing, and rows already there are never changed."""

from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError

from crowd.ledger import reconcile_participation
from crowd.models import Participation, Study


class Command(BaseCommand):
    help = "Add any ledger rows missing for the studies' participations (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--study", help="Only this study (public id); default every study.")

    def handle(self, *args, study=None, **options):
        participations = Participation.objects.order_by("pk")
        if study:
            try:
                participations = participations.filter(study=Study.objects.get(public_id=uuid.UUID(study)))
            except (ValueError, Study.DoesNotExist):
                raise CommandError(f"No study with the id {study!r}.") from None
        added = sum(reconcile_participation(p) for p in participations.iterator())
        self.stdout.write(f"added {added} ledger row(s)")
