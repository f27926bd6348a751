"""URLs of the Schedules page."""

from django.urls import path

from . import views

app_name = "schedules"

urlpatterns = [
    path("schedules/", views.schedule_list, name="list"),
    path("schedules/new/", views.schedule_create, name="create"),
    path("schedules/<str:schedule_id>/pause/", views.schedule_pause, name="pause"),
    path("schedules/<str:schedule_id>/resume/", views.schedule_resume, name="resume"),
    path("schedules/<str:schedule_id>/delete/", views.schedule_delete, name="delete"),
]
