"""API routes of replays (included by generative_bench/api_urls.py; the views: ``api``)."""

from django.urls import path

from . import api

urlpatterns = [
    path(
        "tasks/<str:slug>/rounds/<str:number>/replays/", api.ReplayCreate.as_view(), name="api-replay-create"
    ),
    path("replays/<str:pk>/", api.ReplayDetail.as_view(), name="api-replay"),
    path("replays/<str:pk>/answers/", api.ReplayAnswerList.as_view(), name="api-replay-answers"),
]
