"""Pages of this sub-package (included by generative_bench/urls.py, namespace ``generative_bench``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("tasks/<slug:slug>/transfer/", views.transfer_page, name="transfer"),
]
