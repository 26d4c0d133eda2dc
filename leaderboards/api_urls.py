"""API routes owned by the `leaderboards` app, mounted under ``/api/`` by ``dynabench/api/urls.py``."""

from django.urls import path

from . import api

urlpatterns = [
    path("tasks/<slug:slug>/leaderboard/", api.LeaderboardView.as_view(), name="api-leaderboard"),
    path("tasks/<slug:slug>/export/", api.ExportView.as_view(), name="api-export"),
    path("datasets/", api.DatasetListView.as_view(), name="api-datasets"),
    path("datasets/<int:pk>/", api.DatasetDetailView.as_view(), name="api-dataset"),
]
