"""Shared pieces of the JSON API (docs/api.md): pagination, error format, idempotency.

Each app owns its endpoints in ``<app>/api.py`` (views), ``<app>/serializers.py`` and
``<app>/api_urls.py``; ``dynabench/api_urls.py`` mounts them all under ``/api/``.
"""
