"""``manage.py ensure_schedules``: create (or update) the job cluster's recurring jobs.

Run by ``scripts/serve.sh`` (and compose) before the cluster starts; ``setup_demo`` creates the same ones
through the same function. The jobs are those the apps registered in their ``AppConfig.ready()``
(``core.job_queue.register_schedule``): today annotation's prediction retries (every 2 minutes),
leaderboards' evaluation sweep (every minute), crowd's abandoned participations (every 5 minutes) and the
model registry's mending of cut-off or lost model checks (every 5 minutes). Idempotent.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from core.job_queue import ensure_registered_schedules


class Command(BaseCommand):
    help = "Create or update the job cluster's recurring jobs (idempotent)."

    def handle(self, *args, **options):
        names = ensure_registered_schedules()
        self.stdout.write(f"schedules ready: {', '.join(names)}")
