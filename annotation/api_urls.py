"""API routes owned by the `annotation` app, mounted under ``/api/`` by ``dynabench/api_urls.py``.

Ids are ``str`` in the routes so that a malformed one gets the API's JSON 404.
"""

from django.urls import path

from . import api
from .assistant import api as assistant_api
from .red_team import api as red_team_api

urlpatterns = [
    path("tasks/<str:slug>/examples/", api.ExampleListCreate.as_view(), name="api-example-list"),
    path("tasks/<str:slug>/confidence/", api.ConfidenceProbe.as_view(), name="api-confidence"),
    path("tasks/<str:slug>/arm/", assistant_api.ArmOfCaller.as_view(), name="api-assistant-arm"),
    path("tasks/<str:slug>/suggestions/", assistant_api.SuggestionCreate.as_view(), name="api-suggestions"),
    path(
        "tasks/<str:slug>/rounds/<str:number>/arms/", assistant_api.RoundArms.as_view(), name="api-round-arms"
    ),
    path("examples/<str:pk>/", api.ExampleDetail.as_view(), name="api-example-detail"),
    path("examples/<str:pk>/retract/", api.ExampleRetract.as_view(), name="api-example-retract"),
    path("examples/<str:pk>/flag/", api.ExampleFlag.as_view(), name="api-example-flag"),
    path(
        "tasks/<str:slug>/conversations/",
        red_team_api.ConversationStart.as_view(),
        name="api-conversation-start",
    ),
    path(
        "conversations/<str:pk>/", red_team_api.ConversationDetail.as_view(), name="api-conversation-detail"
    ),
    path("conversations/<str:pk>/turns/", red_team_api.TurnCreate.as_view(), name="api-conversation-turns"),
    path(
        "conversations/<str:pk>/ratings/",
        red_team_api.Ratings.as_view(),
        name="api-conversation-ratings",
    ),
    path(
        "conversations/<str:pk>/judgement/",
        red_team_api.Judgement.as_view(),
        name="api-conversation-judgement",
    ),
    path("tasks/<str:slug>/choice-items/", red_team_api.ChoiceItemCreate.as_view(), name="api-choice-items"),
]
