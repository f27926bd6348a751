"""URLs of the evaluation pages: batches, suites and their leaderboards, the triage queue and its random sample."""

from django.urls import path

from . import suite_views, views

app_name = "evals"

urlpatterns = [
    path("batches/", views.batch_list, name="list"),
    path("batches/new/", views.batch_new, name="new"),
    path("batches/suites/", suite_views.suite_list, name="suites"),
    path("batches/suites/<str:suite_id>/", suite_views.suite_detail, name="suite"),
    path("batches/suites/<str:suite_id>/leaderboard/", suite_views.suite_leaderboard, name="leaderboard"),
    path(
        "batches/suites/<str:suite_id>/tasks/<path:external_id>/stale/",
        suite_views.suite_task_stale,
        name="suite_task_stale",
    ),
    path("batches/<str:batch_id>/", views.batch_detail, name="detail"),
    path("batches/<str:batch_id>/cancel/", views.batch_cancel, name="cancel"),
    path("batches/<str:batch_id>/rejudge/", views.batch_rejudge, name="rejudge"),
    path("triage/", views.triage, name="triage"),
    path("triage/sample/", suite_views.triage_sample, name="sample"),
    path("triage/sample/runs/<str:run_id>/label/", suite_views.label_run, name="label"),
    path("triage/<str:judgment_id>/truth/", views.record_truth, name="truth"),
]
