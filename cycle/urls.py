"""Pages of the cycle app: a round's page (its artefact probes) and a task owner's dashboard."""

from django.urls import path

from . import views
from .dashboard import views as dashboard_views

app_name = "cycle"

urlpatterns = [
    path("tasks/<slug:slug>/dashboard/", dashboard_views.owner_dashboard, name="dashboard"),
    path("tasks/<slug:slug>/rounds/<str:number>/", views.round_detail, name="round"),
]
