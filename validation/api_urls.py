"""API routes owned by the `validation` app, mounted under ``/api/`` by ``dynabench/api_urls.py``."""

from django.urls import path

from . import api
from .gold import api as gold_api
from .quality import api as quality_api

urlpatterns = [
    path("tasks/<str:slug>/validations/next/", api.NextValidation.as_view(), name="api-validation-next"),
    path("examples/<str:pk>/validations/", api.ExampleValidations.as_view(), name="api-example-validations"),
    path("examples/<str:pk>/validations/mine/", api.MyValidation.as_view(), name="api-my-validation"),
    path("tasks/<str:slug>/gold/", gold_api.GoldItemList.as_view(), name="api-gold-list"),
    path("tasks/<str:slug>/gold/accuracy/", gold_api.GoldAccuracyList.as_view(), name="api-gold-accuracy"),
    path("tasks/<str:slug>/gold/<str:pk>/", gold_api.GoldItemDetail.as_view(), name="api-gold-detail"),
    path(
        "tasks/<str:slug>/rounds/<str:number>/agreement/",
        quality_api.RoundAgreement.as_view(),
        name="api-round-agreement",
    ),
]
