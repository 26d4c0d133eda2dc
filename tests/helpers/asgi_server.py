"""The production profile's ASGI serving, in a thread of the test process: uvicorn with Django's ASGI
application on a loopback port of its own, reading the test database (the test's settings).

    with AsgiServer() as server:
        httpx.post(f"{server.url}/api/...")

The tests that use it take ``transactional_db``: the server's request threads see only committed rows.
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn


class AsgiServer:
    def __init__(self):
        from django.core.asgi import get_asgi_application
        from django.db import connections

        # As dynabench.asgi sets it, for the server's life only: read before that module is imported (its
        # import sets it), so that the rest of the session keeps its connections.
        self._kept = {alias: connections.settings[alias]["CONN_MAX_AGE"] for alias in connections}
        from dynabench.asgi import unkept_connections

        unkept_connections()

        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        config = uvicorn.Config(
            get_asgi_application(),
            lifespan="off",
            log_level="warning",
            timeout_graceful_shutdown=2,
            backlog=512,
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._socket]}, name="asgi-server", daemon=True
        )

    def __enter__(self):
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the ASGI server did not start in 10 s")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
        from django.db import connections

        for alias, age in self._kept.items():
            connections.settings[alias]["CONN_MAX_AGE"] = age
