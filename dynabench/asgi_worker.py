"""The production profile's gunicorn worker: uvicorn serving the ASGI application (``gunicorn.conf.py``).

Why ASGI (docs/serving.md, "Many streams per worker"): a streamed answer is read on the worker's event
loop (``core.streaming``), so an answer coming from a remote chat server holds no thread for its whole
length, and one worker carries hundreds of them; every other view stays a plain Django view, run in a
thread of its own as under WSGI.

Imported by gunicorn's master process before it forks: it imports neither Django nor torch.
"""

from __future__ import annotations

from uvicorn_worker import UvicornWorker


class Worker(UvicornWorker):
    """``uvicorn_worker.UvicornWorker`` with uvloop and httptools, no lifespan (Django has none), and
    gunicorn's ``graceful_timeout`` as uvicorn's: a stop lets open streams run that long, then cancels
    them (an answer cut short is stored as such, ``annotation.red_team.conversations.TurnStream``)."""

    CONFIG_KWARGS = {"loop": "uvloop", "http": "httptools", "lifespan": "off"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.config.timeout_graceful_shutdown = max(1, int(self.cfg.graceful_timeout) - 1)
