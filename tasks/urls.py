from django.urls import path

from . import onboarding_views, views

app_name = "tasks"

urlpatterns = [
    path("", views.task_list, name="list"),
    path("tasks/<slug:slug>/", views.task_detail, name="detail"),
    path("tasks/<slug:slug>/tutorial/", onboarding_views.tutorial, name="tutorial"),
    path("tasks/<slug:slug>/quiz/", onboarding_views.quiz, name="quiz"),
]
