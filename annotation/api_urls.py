"""API routes owned by the `annotation` app, mounted under ``/api/`` by ``dynabench/api/urls.py``."""

urlpatterns: list = []
