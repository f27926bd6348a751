"""Operator pages for runs and sessions."""

from django.urls import path

from . import views

app_name = "runs"

urlpatterns = [
    path("", views.run_list, name="list"),
    path("runs/new/", views.run_new, name="new"),
    path("runs/schema-lint/", views.schema_lint, name="schema_lint"),
    path("runs/<str:run_id>/", views.run_detail, name="detail"),
    path("runs/<str:run_id>/row/", views.run_row, name="row"),
    path("runs/<str:run_id>/summary/", views.run_summary, name="summary"),
    path("runs/<str:run_id>/cancel/", views.run_cancel, name="cancel"),
    path("runs/<str:run_id>/person/", views.run_person, name="person"),
    path("runs/<str:run_id>/answer/", views.run_answer, name="answer"),
    path("runs/<str:run_id>/pause/", views.run_pause, name="pause"),
    path("runs/<str:run_id>/resume/", views.run_resume, name="resume"),
    path("runs/<str:run_id>/message/", views.run_message, name="message"),
    path("runs/<str:run_id>/screenshots/<str:name>", views.screenshot, name="screenshot"),
    path("runs/<str:run_id>/trace.zip", views.run_trace, name="trace"),
    path("sessions/", views.session_list, name="sessions"),
    path("sessions/<str:session_id>/", views.session_detail, name="session"),
]
