"""API routes owned by the `cycle` app, mounted under ``/api/`` by ``dynabench/api_urls.py``: a round's
releases and artefact probes, and a task's cycle matrix."""

from django.urls import path

from .matrix import api as matrix_api
from .probes import api as probes_api
from .releases import api as releases_api

urlpatterns = [
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
    path("tasks/<slug:slug>/cycle/", matrix_api.CycleMatrixView.as_view(), name="api-cycle"),
]
