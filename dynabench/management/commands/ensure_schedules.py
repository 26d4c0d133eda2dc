"""``manage.py ensure_schedules``: create (or update) the job cluster's recurring jobs.

Run by ``scripts/serve.sh`` before it starts the cluster (``setup_demo`` does the same for the demo):
scoring again, every 2 minutes, the examples whose target model failed or timed out when they were
written (``annotation.jobs.ensure_retry_schedule``), and every minute, evaluations cut off with their
worker run again (``leaderboards.jobs.ensure_sweep_schedule``), and every 5 minutes, crowd participations past
their time limit abandoned (``crowd.jobs.ensure_abandon_schedule``), and every 5 minutes, model checks cut off
with their worker or lost before they ran mended (``models_registry.jobs.ensure_check_sweep_schedule``).
Idempotent.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from annotation.jobs import RETRY_SCHEDULE, ensure_retry_schedule
from crowd.jobs import ABANDON_SCHEDULE, ensure_abandon_schedule
from leaderboards.jobs import SWEEP_SCHEDULE, ensure_sweep_schedule
from models_registry.jobs import CHECK_SWEEP_SCHEDULE, ensure_check_sweep_schedule


class Command(BaseCommand):
    help = "Create or update the job cluster's recurring jobs (idempotent)."

    def handle(self, *args, **options):
        ensure_retry_schedule()
        ensure_sweep_schedule()
        ensure_abandon_schedule()
        ensure_check_sweep_schedule()
        self.stdout.write(
            f"schedules ready: {RETRY_SCHEDULE}, {SWEEP_SCHEDULE}, {ABANDON_SCHEDULE}, {CHECK_SWEEP_SCHEDULE}"
        )
