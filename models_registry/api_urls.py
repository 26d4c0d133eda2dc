"""API routes owned by the `models_registry` app, mounted under ``/api/`` by ``dynabench/api/urls.py``."""

urlpatterns: list = []
