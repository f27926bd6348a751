"""URLs of the evaluation pages: batches and the triage queue."""

from django.urls import path

from . import views

app_name = "evals"

urlpatterns = [
    path("batches/", views.batch_list, name="list"),
    path("batches/new/", views.batch_new, name="new"),
    path("batches/<str:batch_id>/", views.batch_detail, name="detail"),
    path("batches/<str:batch_id>/cancel/", views.batch_cancel, name="cancel"),
    path("batches/<str:batch_id>/rejudge/", views.batch_rejudge, name="rejudge"),
    path("triage/", views.triage, name="triage"),
    path("triage/<str:judgment_id>/truth/", views.record_truth, name="truth"),
]
