"""API routes owned by the `validation` app, mounted under ``/api/`` by ``dynabench/api/urls.py``."""

urlpatterns: list = []
