"""API routes owned by the `crowd` app, mounted under ``/api/`` by ``dynabench/api_urls.py``."""

from django.urls import path

from . import api

urlpatterns = [
    path("studies/", api.StudyList.as_view(), name="api-study-list"),
    path("studies/<str:public_id>/", api.StudyDetail.as_view(), name="api-study-detail"),
]
