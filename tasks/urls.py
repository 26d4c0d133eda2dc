from django.urls import path

from . import views, views_onboarding

app_name = "tasks"

urlpatterns = [
    path("", views.task_list, name="list"),
    path("tasks/<slug:slug>/", views.task_detail, name="detail"),
    path("tasks/<slug:slug>/tutorial/", views_onboarding.tutorial, name="tutorial"),
    path("tasks/<slug:slug>/quiz/", views_onboarding.quiz, name="quiz"),
]
