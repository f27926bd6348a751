"""The judge's operator pages, under the run they judge."""

from django.urls import path

from . import views

app_name = "judge"

urlpatterns = [
    path("runs/<str:run_id>/rejudge/", views.run_rejudge, name="rejudge"),
]
