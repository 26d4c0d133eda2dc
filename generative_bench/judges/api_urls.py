"""API routes of this sub-package (included by generative_bench/api_urls.py). Ids are ``str`` so that a
malformed one gets the API's JSON 404."""

from django.urls import path

from . import api

urlpatterns = [
    path("tasks/<str:slug>/judges/", api.TaskJudges.as_view(), name="api-task-judges"),
    path("judges/<str:pk>/run/", api.JudgeRun.as_view(), name="api-judge-run"),
]
