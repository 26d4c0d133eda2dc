"""API routes owned by the `validation` app, mounted under ``/api/`` by ``dynabench/api/urls.py``."""

from django.urls import path

from . import api

urlpatterns = [
    path("tasks/<str:slug>/validations/next/", api.NextValidation.as_view(), name="api-validation-next"),
    path("examples/<str:pk>/validations/", api.ExampleValidations.as_view(), name="api-example-validations"),
]
