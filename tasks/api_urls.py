"""API routes owned by the `tasks` app, mounted under ``/api/`` by ``dynabench/api_urls.py``.

Slugs and numbers are ``str`` in the routes so that a malformed one gets the API's JSON 404.
"""

from django.urls import path

from . import api, workers_api

urlpatterns = [
    path("tasks/", api.TaskList.as_view(), name="api-task-list"),
    path("tasks/<str:slug>/", api.TaskDetail.as_view(), name="api-task-detail"),
    path("tasks/<str:slug>/rounds/", api.RoundList.as_view(), name="api-round-list"),
    path("tasks/<str:slug>/rounds/<str:number>/", api.RoundDetail.as_view(), name="api-round-detail"),
    path("tasks/<str:slug>/contexts/next/", api.NextContext.as_view(), name="api-context-next"),
    path("tasks/<str:slug>/workers/", workers_api.TaskWorkerList.as_view(), name="api-task-workers"),
    path(
        "tasks/<str:slug>/workers/<str:username>/",
        workers_api.TaskWorkerDetail.as_view(),
        name="api-task-worker",
    ),
]
