"""gunicorn settings of the production profile (``make serve``, ``compose.yaml``; docs/deployment.md).

Everything comes from the environment:
    DYNABENCH_HOST, DYNABENCH_PORT  where to listen; default ``127.0.0.1`` and ``8000``.
    DYNABENCH_WEB_WORKERS  worker processes, default two per core this process may run on. Each holds
                       its own copy of the target models (about 90 MB each for MiniLM, 450-700 MB
                       resident with torch). Two per core because a request is short bursts of Python
                       between database round trips, and one process runs Python on one core at a time
                       (the interpreter lock): with one process per core a core sat idle while that
                       process's threads queued for the lock. Measured with 200 annotators and 20
                       validators at 10 s think time and a training job running (docs/serving.md,
                       "Where the time went"): 2 workers x 8 threads, p95 305 ms and max 804 ms;
                       4 workers x 4 threads, p95 243 ms and max 778 ms.
    DYNABENCH_WEB_THREADS  default 4: what a worker's local generation is sized from (its generation
                       slots and the line waiting for them, DYNABENCH_GENERATION_QUEUE; by default half
                       of it, engine/runtime/slots.py). The workers are ASGI ones (uvicorn,
                       dynabench/asgi_worker.py): every request runs in a thread of its own (Django's
                       ASGI handler), and a streamed answer is read on the event loop, so a remote
                       model's answers hold no thread while they stream (docs/serving.md, "Many streams
                       per worker"). Until 2026-12 the workers were gunicorn's gthread ones with this
                       many threads each.
    DYNABENCH_WEB_TIMEOUT  seconds before a silent worker is killed and replaced, default 60; above
                       DYNABENCH_INFERENCE_TIMEOUT_SECONDS, so a slow model fails its call first.
"""

import os

from core.env import Env

env = Env()


def _whole_number(var: str, default: int, minimum: int) -> int:
    """``var`` as an integer of at least ``minimum``; ``default`` when unset or empty. A bad value stops
    the start with one line naming it (``core.env``)."""
    return env.int(var, minimum=minimum) if os.environ.get(var, "").strip() else default


bind = f"{os.environ.get('DYNABENCH_HOST', '127.0.0.1')}:{_whole_number('DYNABENCH_PORT', 8000, 1)}"
workers = _whole_number("DYNABENCH_WEB_WORKERS", 2 * len(os.sched_getaffinity(0)), 1)
# ASGI under uvicorn (dynabench/asgi_worker.py): streamed answers are read on the event loop, every other
# view runs in a thread of its own (Django's ASGI handler), as it did under gthread.
worker_class = "dynabench.asgi_worker.Worker"
threads = _whole_number("DYNABENCH_WEB_THREADS", 4, 1)
wsgi_app = "dynabench.asgi:application"
timeout = _whole_number("DYNABENCH_WEB_TIMEOUT", 60, 1)
# A stop (SIGTERM) lets requests in hand finish for this long, then kills them.
graceful_timeout = 10
keepalive = 5
# Many annotators connect at once when a crowd study opens.
backlog = 2048
accesslog = "-"
errorlog = "-"
# gunicorn's control socket (one per user's home by default) is not used, and two instances on one host
# would fight over it.
control_socket_disable = True
# Not preloaded: torch must not be imported before the fork (its thread pools do not survive it).
preload_app = False


def post_worker_init(worker):
    from models_registry.warmup import prepare_web_worker

    prepare_web_worker(processes=workers, threads=threads)
