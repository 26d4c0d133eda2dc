from django.urls import path

from . import views
from .quality import views as quality_views

app_name = "validation"

urlpatterns = [
    path("tasks/<slug:slug>/validate/", views.validate, name="validate"),
    path("tasks/<slug:slug>/validate/undo/", views.undo, name="undo"),
    path("tasks/<slug:slug>/review/", views.review, name="review"),
    path("tasks/<slug:slug>/review/verdict/", views.review_verdict, name="review_verdict"),
    path("tasks/<slug:slug>/me/", views.my_stats, name="me"),
    path("tasks/<slug:slug>/rounds/<str:number>/quality/", quality_views.round_quality_page, name="quality"),
    path(
        "tasks/<slug:slug>/rounds/<str:number>/quality/people/<str:person>/",
        quality_views.round_person,
        name="quality_person",
    ),
]
