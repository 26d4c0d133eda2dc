"""API routes owned by the `models_registry` app, mounted under ``/api/`` by ``dynabench/api_urls.py``."""

from django.urls import path

from models_registry import api

urlpatterns = [
    path("models/", api.ModelListCreateView.as_view(), name="api-models"),
    path("models/<int:pk>/", api.ModelDetailView.as_view(), name="api-model"),
    path("models/<int:pk>/predict/", api.ModelPredictView.as_view(), name="api-model-predict"),
]
