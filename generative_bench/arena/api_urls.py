"""API routes of the arena (included by generative_bench/api_urls.py). Ids are ``str`` in the routes so
that a malformed one gets the API's JSON 404."""

from django.urls import path

from . import api

urlpatterns = [
    path("tasks/<str:slug>/battles/", api.BattleCreate.as_view(), name="api-battle-create"),
    path("battles/<str:pk>/", api.BattleDetail.as_view(), name="api-battle-detail"),
    path("battles/<str:pk>/vote/", api.BattleVote.as_view(), name="api-battle-vote"),
    path("tasks/<str:slug>/arena/ranking/", api.ArenaRanking.as_view(), name="api-arena-ranking"),
    path(
        "tasks/<str:slug>/rounds/<str:number>/side-by-side/",
        api.SideBySideRatings.as_view(),
        name="api-side-by-side-ratings",
    ),
]
