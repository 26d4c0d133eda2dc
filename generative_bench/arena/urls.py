"""Pages of the arena (included by generative_bench/urls.py, in its ``generative_bench`` namespace):
``generative_bench:arena``, ``arena_start``, ``arena_battle``, ``arena_vote``, ``arena_ranking``, ``arena_hold_voters``,
``arena_measure_leak``."""

from django.urls import path

from . import views

urlpatterns = [
    path("tasks/<slug:slug>/arena/", views.arena, name="arena"),
    path("tasks/<slug:slug>/arena/battles/", views.start, name="arena_start"),
    path("tasks/<slug:slug>/arena/battles/<int:pk>/", views.battle, name="arena_battle"),
    path("tasks/<slug:slug>/arena/battles/<int:pk>/vote/", views.vote, name="arena_vote"),
    path("tasks/<slug:slug>/arena/ranking/", views.ranking, name="arena_ranking"),
    path("tasks/<slug:slug>/arena/ranking/hold-voters/", views.hold_voters, name="arena_hold_voters"),
    path("tasks/<slug:slug>/arena/ranking/measure-leak/", views.measure_leak, name="arena_measure_leak"),
]
