"""ASGI entry point: the production profile's workers serve it (``dynabench/asgi_worker.py``)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench.settings")
application = get_asgi_application()


def unkept_connections() -> None:
    """Set ``CONN_MAX_AGE`` to 0 for every database without a pool. Under ASGI each request runs in a
    thread of its own that ends with it (Django's ``ThreadSensitiveContext``): a connection kept for reuse
    would never be reused, and would stay open until collected (60 streams left 60 of PostgreSQL's 100
    connections taken). Without a pool (``DYNABENCH_DB_POOL``), each request opens and closes its own."""
    from django.db import connections

    for alias in connections:
        options = connections.settings[alias].get("OPTIONS") or {}
        if not options.get("pool"):
            connections.settings[alias]["CONN_MAX_AGE"] = 0


unkept_connections()
