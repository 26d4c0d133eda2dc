"""A request thread that starts a long wait on a model gives its place in the server's pool to a new
thread, so that ordinary pages never wait behind streamed answers.

Why: the demo's server (``demo.server.QueueingWSGIServer``) serves requests with a fixed pool of 8
threads, and a streamed answer of a local model holds its request's thread for its whole length (5 to 15
s with SmolLM2 on 2 cores). The generation slots were therefore sized from the pool (half of it), and a
fifth red-teamer at once was refused although the model's batch decodes eight answers almost as fast as
four (docs/generative.md, "Continuous batching"). A thread that waits on the model's batcher
uses no CPU of its own: the pool's size is what bounds the CPU that pages take, so a waiting thread need
not count in it.

The server marks each of its pool's threads with ``serve_with`` for the length of one request; the
generation line (``engine.runtime.slots.GenerationSlots.join``) calls ``leave_pool`` when a request takes
its place in line. The server then starts another thread for its pool, and the thread that left ends
with its request. Elsewhere (tests, the job cluster, an ASGI worker whose local answers are pulled by a
thread of their own) nothing marks the thread and ``leave_pool`` does nothing.

Plain Python: imports nothing of Django.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_marked = threading.local()


@contextmanager
def serve_with(on_leave: Callable[[], None]) -> Iterator[Callable[[], bool]]:
    """Mark the calling thread as one of a server's pool for the ``with`` block (one request):
    ``leave_pool`` in the block calls ``on_leave`` once (the server starts a new pool thread there).
    Yields a function that tells, after the block, whether the thread left the pool (it should then end
    once the request is served, as its place is taken)."""
    state = {"on_leave": on_leave, "left": False}
    _marked.state = state
    try:
        yield lambda: state["left"]
    finally:
        _marked.state = None


def leave_pool() -> bool:
    """Give the calling thread's place in its server's pool to a new thread, once per request; True if
    the thread was a pool's and had not left yet, False otherwise (nothing done). An error the server's
    ``on_leave`` raises is raised here, and the thread stays in the pool."""
    state = getattr(_marked, "state", None)
    if state is None or state["left"]:
        return False
    state["on_leave"]()
    state["left"] = True
    return True
