"""The project package: settings and wiring only (``settings.py``, ``urls.py``, ``api_urls.py``, ``wsgi.py``,
``asgi.py``, the site's templates and static files, and the ``manage.py`` commands that span apps). Shared
code lives in ``core``, the demo in ``demo`` (docs/architecture.md).
"""
