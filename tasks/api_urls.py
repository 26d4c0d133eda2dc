"""API routes owned by the `tasks` app, mounted under ``/api/`` by ``dynabench/api/urls.py``."""

urlpatterns: list = []
