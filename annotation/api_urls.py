"""API routes owned by the `annotation` app, mounted under ``/api/`` by ``dynabench/api_urls.py``.

Ids are ``str`` in the routes so that a malformed one gets the API's JSON 404.
"""

from django.urls import path

from . import api

urlpatterns = [
    path("tasks/<str:slug>/examples/", api.ExampleListCreate.as_view(), name="api-example-list"),
    path("examples/<str:pk>/", api.ExampleDetail.as_view(), name="api-example-detail"),
    path("examples/<str:pk>/retract/", api.ExampleRetract.as_view(), name="api-example-retract"),
    path("examples/<str:pk>/flag/", api.ExampleFlag.as_view(), name="api-example-flag"),
]
