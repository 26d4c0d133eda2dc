"""API routes owned by the `leaderboards` app, mounted under ``/api/`` by ``dynabench/api_urls.py``."""

from django.urls import path

from . import api
from .annotators import api as annotators_api

urlpatterns = [
    path("tasks/<slug:slug>/leaderboard/", api.LeaderboardView.as_view(), name="api-leaderboard"),
    path(
        "tasks/<slug:slug>/leaderboard/generative/",
        api.GenerativeLeaderboardView.as_view(),
        name="api-generative-leaderboard",
    ),
    path("tasks/<slug:slug>/export/", api.ExportView.as_view(), name="api-export"),
    path(
        "tasks/<str:slug>/annotators/",
        annotators_api.AnnotatorLeaderboard.as_view(),
        name="api-annotator-leaderboard",
    ),
    path("datasets/", api.DatasetListView.as_view(), name="api-datasets"),
    path("datasets/<int:pk>/", api.DatasetDetailView.as_view(), name="api-dataset"),
]
