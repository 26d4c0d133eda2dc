"""The demo's HTTP server (``manage.py demo_server``): Django's development ``WSGIServer`` made to queue a
burst of connections instead of dropping them.

Why: runserver's server listens with a backlog of 10 and starts one thread per connection. With 50
annotators writing at once (``benchmarks/demo_load.py``) the accept queue overflowed (the kernel's
ListenOverflows grew by 97 in a minute; a client whose handshake is dropped waits for its SYN to be
sent again, 1, 2, 4... s later), 23 of 861 requests got no answer within 30 s, and the 50 threads
queueing for SQLite's write lock made some wait past its 20 s busy timeout ("database is locked", 503).

What it does instead: it listens with a backlog of ``request_queue_size`` (1024; the kernel caps it at
``net.core.somaxconn``), and a fixed pool of ``workers`` daemon threads (8, like one gunicorn worker of
the production profile) serves the accepted connections in the order they came. The accept loop keeps
accepting while fewer than ``max_waiting`` connections wait for a worker, then stops until one is
taken, leaving the rest in the kernel's backlog: a burst waits its turn, nothing is refused. A request
that joins the line for a local model's answer leaves the pool (``core.request_threads``): a new thread
takes its place, so streamed answers, bounded by the generation slots and their line
(``engine.runtime.slots``), never hold the threads that pages need. Each
response closes its connection (Django's ``ServerHandler`` does so for a server that is not a
``ThreadingMixIn``), so an idle keep-alive connection holds no worker; a connection that sends nothing
for ``idle_timeout`` seconds (a browser's speculative pre-connection) is closed.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading

from django.core.servers.basehttp import WSGIServer

from core.request_threads import serve_with

logger = logging.getLogger("django.server")


class QueueingWSGIServer(WSGIServer):
    """Django's ``WSGIServer`` with a listen backlog of ``request_queue_size`` connections and at most
    ``workers`` requests served at once, by a pool of daemon threads started with the server; accepted
    connections wait for a worker in a first-in first-out queue of at most ``max_waiting``.

    Constructed as ``WSGIServer`` is (``server_address``, handler class, ``ipv6=``); raises ``OSError``
    when the address cannot be bound. ``server_close()`` also lets the workers end once the
    connections already accepted are served. ``with_workers(n)`` gives the class with another pool
    size (Django's ``runserver`` instantiates the class itself).
    """

    request_queue_size = 1024
    workers = 8
    max_waiting = 1024
    idle_timeout = 10.0  # seconds a connection may stay silent (reading or writing) before it is closed

    @classmethod
    def with_workers(cls, workers: int) -> type[QueueingWSGIServer]:
        """This class with a pool of ``workers`` threads (at least 1; ``ValueError`` below that)."""
        if workers < 1:
            raise ValueError(f"a server needs at least 1 worker, not {workers}")
        return type(cls.__name__, (cls,), {"workers": workers})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._waiting: queue.Queue = queue.Queue(maxsize=self.max_waiting)
        self._pool_lock = threading.Lock()
        self._started = 0
        for _ in range(self.workers):
            self._add_worker()

    def process_request(self, request, client_address):
        """Queue an accepted connection for the pool; blocks (so accepts no more) while the queue is full."""
        self._waiting.put((request, client_address))

    def _serve_waiting(self) -> None:
        while (item := self._waiting.get()) is not None:
            request, client_address = item
            with serve_with(self._add_worker) as left_pool:
                try:
                    request.settimeout(self.idle_timeout)
                    self.finish_request(request, client_address)
                except Exception:
                    self.handle_error(request, client_address)
                finally:
                    self.shutdown_request(request)
            if left_pool():
                return  # a new thread took this one's place in the pool while it streamed

    def _add_worker(self) -> None:
        """Start one more pool thread: the calling one is leaving the pool to wait on a model
        (``core.request_threads.leave_pool``) and ends with its request."""
        with self._pool_lock:
            self._started += 1
            thread = threading.Thread(
                target=self._serve_waiting,
                name=f"demo-server-{self.server_port}-{self._started}",
                daemon=True,
            )
            thread.start()

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], TimeoutError):
            logger.info("- Connection from %s closed: silent for %g s", client_address, self.idle_timeout)
        else:
            super().handle_error(request, client_address)

    def server_close(self):
        super().server_close()
        # A bind that failed (port taken) closes the server before __init__ made the pool: let the
        # "Address already in use" error through instead of hiding it under an AttributeError. One end
        # mark per pool thread: a thread that left the pool ends with its request and takes none.
        if hasattr(self, "_waiting"):
            for _ in range(self.workers):
                self._waiting.put(None)
