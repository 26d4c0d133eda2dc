"""API routes owned by the `leaderboards` app, mounted under ``/api/`` by ``dynabench/api/urls.py``."""

urlpatterns: list = []
