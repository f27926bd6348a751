"""Operator pages for runs and sessions."""

from django.urls import path

from . import proxy_views, share_views, views
from .profiles import views as profile_views

app_name = "runs"

urlpatterns = [
    path("", views.run_list, name="list"),
    path("runs/new/", views.run_new, name="new"),
    path("runs/schema-lint/", views.schema_lint, name="schema_lint"),
    path("runs/<str:run_id>/", views.run_detail, name="detail"),
    path("runs/<str:run_id>/row/", views.run_row, name="row"),
    path("runs/<str:run_id>/summary/", views.run_summary, name="summary"),
    path("runs/<str:run_id>/cancel/", views.run_cancel, name="cancel"),
    path("runs/<str:run_id>/save/", profile_views.sign_in_save, name="sign_in_save"),
    path("runs/<str:run_id>/panels/", views.run_panels, name="panels"),
    path("runs/<str:run_id>/answer/", views.run_answer, name="answer"),
    path("runs/<str:run_id>/pause/", views.run_pause, name="pause"),
    path("runs/<str:run_id>/resume/", views.run_resume, name="resume"),
    path("runs/<str:run_id>/message/", views.run_message, name="message"),
    path("runs/<str:run_id>/screenshots/<str:name>", views.screenshot, name="screenshot"),
    path("runs/<str:run_id>/trace.zip", views.run_trace, name="trace"),
    path("runs/<str:run_id>/files/<str:file_id>", views.run_file, name="file"),
    path("profiles/", profile_views.profile_list, name="profiles"),
    path("profiles/new/", profile_views.profile_create, name="profile_create"),
    path("profiles/<str:profile_id>/delete/", profile_views.profile_delete, name="profile_delete"),
    path("profiles/<str:profile_id>/sign-in/", profile_views.profile_sign_in, name="profile_sign_in"),
    path("sessions/", views.session_list, name="sessions"),
    path("sessions/<str:session_id>/", views.session_detail, name="session"),
    path("sessions/<str:session_id>/share/", share_views.session_share, name="session_share"),
    path("sessions/<str:session_id>/unshare/", share_views.session_unshare, name="session_unshare"),
    path("sessions/<str:session_id>/purge/", share_views.session_purge, name="session_purge"),
    path("settings/proxies/", proxy_views.proxy_create, name="proxy_create"),
    path("settings/proxies/<str:proxy_id>/delete/", proxy_views.proxy_delete, name="proxy_delete"),
]
