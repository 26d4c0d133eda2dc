"""``manage.py ensure_schedules``: create (or update) the job cluster's recurring jobs.

Run by ``scripts/serve.sh`` (and compose) before the cluster starts; ``setup_demo`` creates the same ones
through the same function. The jobs are those the apps registered in their ``AppConfig.ready()``
(``core.job_queue.register_schedule``): today annotation's prediction retries (every 2 minutes),
leaderboards' evaluation sweep (every minute), crowd's abandoned participations (every 5 minutes) and the
model registry's mending of cut-off or lost model checks (every 5 minutes). A schedule of the project's
own jobs that no app registers any more (a renamed or dropped job) is deleted; one of other code (added
in the admin) is kept. Idempotent.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from core.job_queue import ensure_registered_schedules


class Command(BaseCommand):
    help = (
        "Create or update the job cluster's recurring jobs, and delete the schedules of the project's jobs "
        "that no app registers any more (idempotent)."
    )

    def handle(self, *args, **options):
        report = ensure_registered_schedules()
        self.stdout.write(f"schedules ready: {', '.join(report.ensured)}")
        if report.removed:
            self.stdout.write(f"removed (no app registers them): {', '.join(report.removed)}")
        if report.kept:
            self.stdout.write(f"kept (not the project's jobs): {', '.join(report.kept)}")
