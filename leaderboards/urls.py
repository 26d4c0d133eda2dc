from django.urls import path

from . import views
from .annotators import views as annotators_views
from .generative import views as generative_views

app_name = "leaderboards"

urlpatterns = [
    path("tasks/<slug:slug>/leaderboard/", views.leaderboard, name="leaderboard"),
    path(
        "tasks/<slug:slug>/leaderboard/generative/",
        generative_views.generative_leaderboard,
        name="generative",
    ),
    path("tasks/<slug:slug>/leaderboard/forks/", views.fork_create, name="fork_create"),
    path("tasks/<slug:slug>/leaderboard/forks/<slug:fork_slug>/", views.fork_detail, name="fork"),
    path("tasks/<slug:slug>/leaderboard/snapshots/", views.snapshot_create, name="snapshot_create"),
    path("tasks/<slug:slug>/leaderboard/snapshots/<int:pk>/", views.snapshot_detail, name="snapshot"),
    path("models/<int:pk>/", views.model_detail, name="model"),
    path("tasks/<slug:slug>/annotators/", annotators_views.annotator_leaderboard, name="annotators"),
]
