"""``manage.py demo_server ADDR:PORT --noreload [--workers 8]``: Django's development server as the demo
runs it (``scripts/demo.sh``), which first starts loading the open rounds' target models on a background
thread, as each gunicorn worker of the production profile does (``models_registry.warmup.prepare_web_worker``),
and serves through ``demo.server.QueueingWSGIServer``: a listen backlog of 1024 and ``--workers``
threads, so a burst of connections waits its turn instead of being dropped.

Why the preload: the demo's server opens while the background setup trains and evaluates on the same
cores; a target loaded on the first request (the first curl call of docs/api.md) then took over the 20-second
inference timeout and the example was stored unscored. Loading starts with the server instead, before
anyone has written. A request for a model still loading waits for that one load.
``DYNABENCH_PRELOAD_TARGETS=0`` turns it off.

Why the server: runserver's (a backlog of 10, a thread per connection) left 23 of 861 requests of 50
annotators writing at once without an answer and let SQLite's write lock time out (``demo/server.py``,
docs/deployment.md, "The demo's server"). ``--nothreading`` serves one request at a time (one worker).
"""

from __future__ import annotations

from django.core.management.base import CommandError
from django.core.management.commands.runserver import Command as RunserverCommand

from demo.server import QueueingWSGIServer
from models_registry.warmup import prepare_web_worker


class Command(RunserverCommand):
    help = (
        "The development server of the demo: runserver, loading the open rounds' targets as it starts and "
        "queueing connections for a fixed pool of threads."
    )
    server_cls = QueueingWSGIServer

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--workers",
            type=int,
            default=QueueingWSGIServer.workers,
            help=f"Requests served at once (threads); default {QueueingWSGIServer.workers}.",
        )

    def inner_run(self, *args, **options):
        workers = (
            options.get("workers", QueueingWSGIServer.workers) if options.get("use_threading", True) else 1
        )
        if workers < 1:
            raise CommandError(f"--workers must be at least 1, not {workers}.")
        self.server_cls = QueueingWSGIServer.with_workers(workers)
        # One server process: torch gets every core. A request that joins the line for a generation slot
        # leaves the pool (demo.server), so the slots are the batch's size, not a share of the pool.
        prepare_web_worker(processes=1, threads=workers, threads_leave_pool=True)
        # The server runs its own pool; Django's threading would put a ThreadingMixIn (one thread per
        # connection) in front of it.
        super().inner_run(*args, **{**options, "use_threading": False})
