"""API routes owned by the `leaderboards` app, mounted under ``/api/`` by ``dynabench/api_urls.py``."""

from django.urls import path

from . import api, cycle_api, releases_api
from .annotators import api as annotators_api
from .probes import api as probes_api

urlpatterns = [
    path("tasks/<slug:slug>/leaderboard/", api.LeaderboardView.as_view(), name="api-leaderboard"),
    path(
        "tasks/<slug:slug>/leaderboard/generative/",
        api.GenerativeLeaderboardView.as_view(),
        name="api-generative-leaderboard",
    ),
    path("tasks/<slug:slug>/export/", api.ExportView.as_view(), name="api-export"),
    path(
        "tasks/<str:slug>/rounds/<str:number>/releases/",
        releases_api.ReleaseList.as_view(),
        name="api-releases",
    ),
    path(
        "tasks/<str:slug>/rounds/<str:number>/releases/<str:version>/",
        releases_api.ReleaseDetail.as_view(),
        name="api-release",
    ),
    path(
        "tasks/<str:slug>/rounds/<str:number>/releases/<str:version>/files/<str:name>",
        releases_api.ReleaseFile.as_view(),
        name="api-release-file",
    ),
    path(
        "tasks/<str:slug>/rounds/<str:number>/probes/",
        probes_api.RoundProbesView.as_view(),
        name="api-round-probes",
    ),
    path(
        "tasks/<str:slug>/annotators/",
        annotators_api.AnnotatorLeaderboard.as_view(),
        name="api-annotator-leaderboard",
    ),
    path("tasks/<slug:slug>/cycle/", cycle_api.CycleMatrixView.as_view(), name="api-cycle"),
    path("datasets/", api.DatasetListView.as_view(), name="api-datasets"),
    path("datasets/<int:pk>/", api.DatasetDetailView.as_view(), name="api-dataset"),
]
