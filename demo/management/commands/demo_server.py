"""``manage.py demo_server ADDR:PORT --noreload``: Django's development server as the demo runs it
(``scripts/demo.sh``), which first starts loading the open rounds' target models on a background thread,
as each gunicorn worker of the production profile does (``models_registry.warmup.prepare_web_worker``).

Why: the demo's server opens while the background setup trains and evaluates on the same cores; a target
loaded on the first request (the README's first curl call) then took over the 20-second inference timeout
and the example was stored unscored. Loading starts with the server instead, before anyone has written.
A request for a model still loading waits for that one load. ``DYNABENCH_PRELOAD_TARGETS=0`` turns it off.
"""

from __future__ import annotations

from django.core.management.commands.runserver import Command as RunserverCommand

from models_registry.warmup import prepare_web_worker


class Command(RunserverCommand):
    help = "The development server of the demo: runserver, loading the open rounds' targets as it starts."

    def inner_run(self, *args, **options):
        prepare_web_worker(processes=1)  # one server process: torch gets every core
        super().inner_run(*args, **options)
