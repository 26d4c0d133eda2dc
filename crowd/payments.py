"""Exporting what a study owes, in the platform's bulk format, and marking it paid (docs/crowd.md,
"Paying participants").

Formats (UTF-8, LF line ends, amounts with two decimals, half-up, in the study currency):

* Prolific bulk bonus: one line ``<PROLIFIC_PID>,<amount>`` per worker, no header (paste it into
  Prolific's "Bulk bonus payment" box);
* MTurk: CSV with the header ``WorkerId,AssignmentId,BonusAmount,Reason``, one row per worker, for
  ``aws mturk send-bonus`` (one call per row);
* generic: CSV ``participant_id,amount,currency,events`` (``events`` = ledger rows summed).

An id or reason a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@`` ...) gets a leading
apostrophe (``annotation.exports.csv_cell``); platform ids never start so.

The amount is the worker's net of their unpaid rows (reversals included). On Prolific and MTurk the
reward of a completed submission is paid by the platform when the submission is approved: reward rows are
counted in the cost but left out of the bonus file, and marked paid with the export. A worker whose net
is 0 or less is left out and their rows stay unpaid (a reversal is set against later pay).

Two exports at once never include a row twice: the unpaid rows are locked (``select_for_update``) and
marked paid in the transaction that builds the file.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from annotation.exports import csv_cell
from core.money import fmt, two_places

from .models import ZERO, LedgerEntry, PaymentBatch, Platform, Study

PLATFORM_PAYS_REWARD = (Platform.PROLIFIC, Platform.MTURK)


@dataclass(frozen=True)
class Export:
    """An export's file ``content``, its ``batch`` (None on a dry run), and counts."""

    content: str
    batch: PaymentBatch | None
    n_workers: int
    n_entries: int


def _reason(study: Study, kinds: dict[str, int]) -> str:
    parts = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(kinds.items())]
    return f"Bonus for {study.name}: " + ", ".join(parts)


def export_payments(*, study: Study, dry_run: bool = False, user=None, now=None) -> Export:
    """Build the study's payment file from its unpaid ledger rows and, unless ``dry_run``, mark the rows
    it covers paid under a new ``PaymentBatch`` (which keeps the file). With no row to mark paid, no
    batch is created (``batch`` is None, ``n_entries`` 0)."""
    now = now or timezone.now()
    with transaction.atomic():
        rows = list(
            LedgerEntry.objects.filter(study=study, paid_at__isnull=True)
            .select_for_update(of=("self",))
            .select_related("worker__crowd_identity", "participation")
            .order_by("worker_id", "created_at", "id")
        )
        platform_reward = study.platform in PLATFORM_PAYS_REWARD
        by_worker: dict[int, list[LedgerEntry]] = defaultdict(list)
        settled_ids: list[int] = []
        for row in rows:
            if platform_reward and row.kind == LedgerEntry.Kind.REWARD:
                settled_ids.append(row.pk)  # paid by the platform on approval
                continue
            by_worker[row.worker_id].append(row)

        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        if study.platform == Platform.MTURK:
            writer.writerow(["WorkerId", "AssignmentId", "BonusAmount", "Reason"])
        elif study.platform == Platform.GENERIC:
            writer.writerow(["participant_id", "amount", "currency", "events"])
        n_workers = 0
        for entries in by_worker.values():
            net = sum((e.amount for e in entries), Decimal("0"))
            if two_places(net) <= ZERO:
                continue
            n_workers += 1
            settled_ids.extend(e.pk for e in entries)
            worker = entries[0].worker
            identity = getattr(worker, "crowd_identity", None)
            pid = csv_cell(identity.participant_id if identity is not None else worker.username)
            if study.platform == Platform.PROLIFIC:
                writer.writerow([pid, fmt(net)])
            elif study.platform == Platform.MTURK:
                kinds: dict[str, int] = defaultdict(int)
                for e in entries:
                    kinds[e.kind] += 1
                assignment = csv_cell(entries[0].participation.assignment_id)
                writer.writerow([pid, assignment, fmt(net), csv_cell(_reason(study, kinds))])
            else:
                writer.writerow([pid, fmt(net), study.currency, len(entries)])
        content = out.getvalue()
        if dry_run or not settled_ids:  # nothing to mark paid: no (empty) batch
            return Export(content, None, n_workers, len(settled_ids))
        batch = PaymentBatch.objects.create(
            study=study, created_by=user, content=content, n_workers=n_workers, n_entries=len(settled_ids)
        )
        LedgerEntry.objects.filter(pk__in=settled_ids, paid_at__isnull=True).update(paid_at=now, batch=batch)
        return Export(content, batch, n_workers, len(settled_ids))
