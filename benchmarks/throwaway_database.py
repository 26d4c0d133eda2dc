"""Run a benchmark against a throwaway PostgreSQL test database: set up Django, create the database
(``setup_databases``, as the tests do), run, drop it even when the run fails.

The benchmarks measure without Django's debug mode (``DEBUG=0``: debug records every SQL statement and
slows the code down) and offline (``HF_HUB_OFFLINE=1``), with a fresh secret key.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable


def run_on_throwaway_database(database_url: str, run: Callable[[], None], **environment: str) -> None:
    """Point Django at ``database_url`` (whose test database, ``test_<name>``, is created and dropped),
    set ``environment`` (variables forced for this benchmark, e.g. ``DYNABENCH_JOBS_SYNC="0"``), set
    Django up and call ``run()``."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["DEBUG"] = "0"
    os.environ.update(environment)
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(40))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynabench.settings")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")

    import django

    django.setup()
    from django.test.utils import setup_databases, setup_test_environment, teardown_databases

    setup_test_environment()
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        run()
    finally:
        teardown_databases(old_config, verbosity=0)
