"""Operator pages for runs and sessions."""

from django.urls import path

from . import views

app_name = "runs"

urlpatterns = [
    path("", views.run_list, name="list"),
    path("runs/<str:run_id>/", views.run_detail, name="detail"),
    path("runs/<str:run_id>/screenshots/<str:name>", views.screenshot, name="screenshot"),
]
