"""API routes of this sub-package (included by generative_bench/api_urls.py)."""

from django.urls import path

from . import api

urlpatterns = [
    path(
        "tasks/<str:slug>/pairwise-judges/", api.TaskPairwiseJudges.as_view(), name="api-task-pairwise-judges"
    ),
]
