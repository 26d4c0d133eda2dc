from django.urls import path

from . import views

app_name = "crowd"

urlpatterns = [
    path("study/<uuid:public_id>/enter/", views.enter, name="enter"),
    path("study/<uuid:public_id>/consent/", views.consent, name="consent"),
    path("study/<uuid:public_id>/complete/", views.complete, name="complete"),
    path("study/<uuid:public_id>/return/", views.return_study, name="return"),
    path("study/progress/", views.progress, name="progress"),
]
