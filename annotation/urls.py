from django.urls import path

from . import views, why_views
from .my_examples import views as my_examples_views
from .red_team import views as red_team_views

app_name = "annotation"

urlpatterns = [
    path("tasks/<slug:slug>/create/", views.create, name="create"),
    path("tasks/<slug:slug>/red-team/", red_team_views.red_team, name="red_team"),
    path("tasks/<slug:slug>/red-team/send/", red_team_views.send, name="red_team_send"),
    path("tasks/<slug:slug>/red-team/judge/", red_team_views.judge, name="red_team_judge"),
    path("tasks/<slug:slug>/red-team/rate/", red_team_views.rate, name="red_team_rate"),
    path("tasks/<slug:slug>/red-team/new/", red_team_views.new_conversation, name="red_team_new"),
    path("tasks/<slug:slug>/red-team/choice/", red_team_views.choice, name="red_team_choice"),
    path("tasks/<slug:slug>/create/confidence/", views.confidence, name="confidence"),
    path("tasks/<slug:slug>/create/suggest/", views.suggest, name="suggest"),
    path("tasks/<slug:slug>/create/reset-tally/", views.reset_tally, name="reset_tally"),
    path("examples/<int:pk>/", views.outcome, name="outcome"),
    path("examples/<int:pk>/explain/", views.explain, name="explain"),
    path("examples/<int:pk>/retract/", views.retract, name="retract"),
    path("examples/<int:pk>/retract/confirm/", views.retract_confirm, name="retract_confirm"),
    path("examples/<int:pk>/flag/", views.flag, name="flag"),
    path("examples/<int:pk>/model-wrong/", views.model_wrong_verdict, name="model_wrong_verdict"),
    path("me/examples/", my_examples_views.my_examples, name="my_examples"),
    path("examples/<int:pk>/why/", why_views.why, name="why"),
]
