"""Schedules: validation, exactly one run per firing with time driven by the test (a second beat and a restarted one
launch nothing more), changed data, three failures in a row, and workspace scoping. Runs are ended by the test through
runs.lifecycle.finish, as a worker would end them."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from judge.models import Judgment
from runs.lifecycle import finish, mark_started
from runs.models import Event, Run
from schedules import services, tasks
from schedules.cron import latest_slot, next_slots
from schedules.models import Firing, Schedule
from webhooks.models import Delivery, Endpoint

RUN = {"task": "Read the price of the kettle.", "start_url": "https://shop.example.com/"}
EVERY_MINUTE = {"name": "Kettle price", "cron": "* * * * *", "timezone": "UTC", "run": RUN}
T0 = datetime(2026, 12, 2, 9, 0, 12, tzinfo=UTC)


def minute(n: int, seconds: int = 12) -> datetime:
    return T0.replace(second=seconds) + timedelta(minutes=n)


def create(api, **fields):
    response = api.post("/schedules", {**EVERY_MINUTE, **fields})
    assert response.status_code == 201, response.content
    return response.json()


def end(run: Run, status=Run.Status.SUCCEEDED, data=None, capture=None) -> None:
    mark_started(run, "tests")
    with capture(execute=True):
        finish(run, status, success=status == Run.Status.SUCCEEDED, output="Done.", data=data)


def fired_runs(schedule_id: str) -> list[Run]:
    return list(Run.objects.filter(schedule_firings__schedule__public_id=schedule_id).order_by("pk"))


# --- validation --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"cron": "* * * *"}, "cron"),
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "0 0 30 2 *"}, "cron"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"name": "  "}, "name"),
        ({"run": {"task": ""}}, "run.task"),
        ({"run": {**RUN, "start_url": "ftp://x"}}, "run.start_url"),
        ({"run": {**RUN, "max_turns": 0}}, "run.max_turns"),
        ({"run": {**RUN, "output_schema": {"type": "string"}}}, "run.output_schema"),
        ({"run": {**RUN, "secrets": {"PASSWORD": "x"}}}, "run.secrets"),
        ({"run": {**RUN, "session_id": "sess_x"}}, "run.session_id"),
        ({"run": {**RUN, "colour": "red"}}, "run.colour"),
        ({"run": {**RUN, "proxy_id": "proxy_unknown"}}, "run.proxy_id"),
        ({"run": {**RUN, "profile_id": "prof_unknown"}}, "run.profile_id"),
        ({"run": {**RUN, "file_ids": ["file_unknown"]}}, "run.file_ids"),
        ({"run": {**RUN, "save_profile": "yes"}}, "run.save_profile"),
    ],
)
def test_a_bad_schedule_is_refused_by_field_and_nothing_is_created(api, fields, field):
    response = api.post("/schedules", {**EVERY_MINUTE, **fields})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"].startswith(f"{field}: "), response.json()
    assert not Schedule.objects.exists() and not PeriodicTask.objects.filter(task=services.FIRE_TASK).exists()
    assert not Run.objects.exists(), "validation launches nothing"


def test_a_schedule_owns_its_beat_rows_and_shows_its_next_firings(api):
    created = create(api, cron="0 7 * * mon-fri", timezone="Europe/Paris")
    assert created["id"].startswith("sch_") and created["enabled"] and created["history"] == []
    assert len(created["next_firings"]) == 5
    for when in created["next_firings"]:
        local = datetime.fromisoformat(when).astimezone(__import__("zoneinfo").ZoneInfo("Europe/Paris"))
        assert (local.hour, local.minute) == (7, 0) and local.isoweekday() <= 5
    schedule = Schedule.objects.get(public_id=created["id"])
    task = schedule.periodic_task
    assert task.task == "schedules.tasks.fire" and task.args == f'["{created["id"]}"]' and task.enabled
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == ("0", "7", "mon-fri")
    assert str(task.crontab.timezone) == "Europe/Paris"

    changed = api.patch(f"/schedules/{created['id']}", {"cron": "30 6 * * *", "timezone": "UTC"})
    assert changed.status_code == 200, changed.content
    task.refresh_from_db()
    task.crontab.refresh_from_db()
    assert (task.crontab.minute, task.crontab.hour, str(task.crontab.timezone)) == ("30", "6", "UTC")

    paused = api.post(f"/schedules/{created['id']}/pause", {}).json()
    task.refresh_from_db()
    assert not paused["enabled"] and paused["next_firings"] == [] and not task.enabled
    resumed = api.post(f"/schedules/{created['id']}/resume", {}).json()
    task.refresh_from_db()
    assert resumed["enabled"] and resumed["paused_reason"] is None and task.enabled

    assert api.delete(f"/schedules/{created['id']}").status_code == 204
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert not CrontabSchedule.objects.filter(pk=task.crontab_id).exists()


def test_slots_follow_the_time_zone_and_skip_a_time_the_dst_change_removes():
    paris_0230 = "30 2 * * *"
    # 29 March 2026: Paris goes from 02:00 to 03:00, so 02:30 does not exist that day.
    assert latest_slot(paris_0230, "Europe/Paris", datetime(2026, 3, 29, 3, 0, tzinfo=UTC)) == datetime(
        2026, 3, 28, 1, 30, tzinfo=UTC
    )
    assert next_slots(paris_0230, "Europe/Paris", datetime(2026, 3, 28, 12, 0, tzinfo=UTC), 2) == [
        datetime(2026, 3, 30, 0, 30, tzinfo=UTC),
        datetime(2026, 3, 31, 0, 30, tzinfo=UTC),
    ]
    assert latest_slot("*/15 * * * *", "UTC", minute(0, 59)) == T0.replace(second=0)


# --- exactly once ------------------------------------------------------------------------------------------------


def test_every_minute_one_run_per_firing_however_often_beat_sends_it(api):
    schedule_id = create(api)["id"]
    for n in range(3):
        tasks.fire(schedule_id, minute(n, 1).isoformat())
        tasks.fire(schedule_id, minute(n, 2).isoformat())  # a second beat process, same slot
    assert len(fired_runs(schedule_id)) == 3

    # A beat restarted within the minute sends the task again for the slot already fired.
    tasks.fire(schedule_id, minute(2, 40).isoformat())
    runs = fired_runs(schedule_id)
    assert len(runs) == 3
    slots = list(Firing.objects.filter(schedule__public_id=schedule_id).order_by("slot").values_list("slot", flat=True))
    assert slots == [T0.replace(second=0) + timedelta(minutes=n) for n in range(3)]
    assert all(run.task == RUN["task"] and run.start_url == RUN["start_url"] for run in runs)
    assert len({run.session_id for run in runs}) == 3, "each firing starts its own session"

    history = api.get(f"/schedules/{schedule_id}").json()["history"]
    assert [h["run_id"] for h in history] == [run.public_id for run in reversed(runs)]
    assert {h["status"] for h in history} == {"queued"}


def test_a_firing_run_a_moment_before_its_time_is_that_slots_not_the_one_before(api):
    schedule_id = create(api)["id"]
    tasks.fire(schedule_id, minute(0).isoformat())
    # beat meant minute 1; the worker's clock says a twentieth of a second before it
    tasks.fire(schedule_id, (minute(1, 0) - timedelta(milliseconds=50)).isoformat())
    assert Run.objects.count() == 2, "the second firing was taken for the first's slot and launched nothing"


def test_a_paused_or_deleted_schedule_fires_nothing(api):
    schedule_id = create(api, enabled=False)["id"]
    tasks.fire(schedule_id, minute(0).isoformat())
    assert not Run.objects.exists()
    api.delete(f"/schedules/{schedule_id}")
    tasks.fire(schedule_id, minute(1).isoformat())
    assert not Run.objects.exists()


# --- a run's end -------------------------------------------------------------------------------------------------


def test_changed_data_raises_schedule_data_changed_with_the_diff_and_its_webhook(
    api, acme, django_capture_on_commit_callbacks
):
    Endpoint.objects.create(workspace=acme, url="https://hooks.example.com/in", events=["schedule.data_changed"])
    schedule_id = create(api)["id"]
    datas = [
        {"price": 30, "stock": "in", "tags": ["a"]},
        {"price": 30, "stock": "in", "tags": ["a"]},
        {"price": 25, "tags": ["a", "b"], "sale": True},
    ]
    for n, data in enumerate(datas):
        tasks.fire(schedule_id, minute(n).isoformat())
        end(fired_runs(schedule_id)[-1], data=data, capture=django_capture_on_commit_callbacks)

    runs = fired_runs(schedule_id)
    changed = Event.objects.filter(type="schedule.data_changed")
    assert [e.run_id for e in changed] == [runs[2].pk], "the same data twice raises nothing; changed data once"
    payload = changed.get().payload
    assert payload["previous_run_id"] == runs[1].public_id and payload["schedule_id"] == schedule_id
    assert payload["diff"] == {
        "added": [{"path": "/sale", "after": True}, {"path": "/tags/1", "after": "b"}],
        "removed": [{"path": "/stock", "before": "in"}],
        "changed": [{"path": "/price", "before": 30, "after": 25}],
    }
    body = json.loads(Delivery.objects.get(event_type="schedule.data_changed").body)
    assert body["type"] == "schedule.data_changed" and body["data"]["diff"] == payload["diff"]
    assert body["data"]["schedule"]["id"] == schedule_id and body["data"]["run"]["id"] == runs[2].public_id


def test_three_failures_in_a_row_pause_the_schedule_and_say_why(api, django_capture_on_commit_callbacks, settings):
    assert settings.SCHEDULE_MAX_CONSECUTIVE_FAILURES == 3
    schedule_id = create(api)["id"]
    outcomes = [Run.Status.FAILED, Run.Status.FAILED, Run.Status.SUCCEEDED, Run.Status.FAILED, Run.Status.FAILED]
    for n, status in enumerate(outcomes):
        tasks.fire(schedule_id, minute(n).isoformat())
        end(fired_runs(schedule_id)[-1], status=status, data={"n": n}, capture=django_capture_on_commit_callbacks)
    schedule = api.get(f"/schedules/{schedule_id}").json()
    assert schedule["enabled"] and schedule["consecutive_failures"] == 2, "a success in between starts the count again"
    assert Event.objects.filter(type="schedule.run_failed").count() == 4

    # The third failure in a row is a judge's: the run succeeded, its judgment failed it.
    tasks.fire(schedule_id, minute(5).isoformat())
    judged = fired_runs(schedule_id)[-1]
    Run.objects.filter(pk=judged.pk).update(judge=True)
    judged.refresh_from_db()
    end(judged, data={"n": 5}, capture=django_capture_on_commit_callbacks)
    assert api.get(f"/schedules/{schedule_id}").json()["consecutive_failures"] == 2, (
        "a judged run waits for its verdict"
    )
    judgment = Judgment.objects.create(run=judged, verdict="fail", reason="The price shown was the old one.")
    with django_capture_on_commit_callbacks(execute=True):
        from runs.events import emit

        emit(judged, "run.judged", {**judgment.as_dict(), "judgment_id": judgment.pk})

    schedule = api.get(f"/schedules/{schedule_id}").json()
    assert not schedule["enabled"] and schedule["consecutive_failures"] == 3
    assert "3 failures in a row" in schedule["paused_reason"] and "old one" in schedule["paused_reason"]
    assert schedule["history"][0]["verdict"] == "fail"
    assert schedule["history"][0]["judge_reason"] == "The price shown was the old one."
    assert not Schedule.objects.get(public_id=schedule_id).periodic_task.enabled, "beat stops sending it"
    tasks.fire(schedule_id, minute(6).isoformat())
    assert len(fired_runs(schedule_id)) == 6, "a paused schedule launches nothing"

    resumed = api.post(f"/schedules/{schedule_id}/resume", {}).json()
    assert resumed["enabled"] and resumed["consecutive_failures"] == 0 and resumed["paused_reason"] is None


# --- workspaces --------------------------------------------------------------------------------------------------


def test_another_workspace_sees_404_for_every_operation(api, umbrella_api):
    schedule_id = create(api)["id"]
    assert umbrella_api.get("/schedules").json()["schedules"] == []
    for method, path in [
        ("get", ""), ("patch", ""), ("delete", ""), ("post", "/pause"), ("post", "/resume"),
    ]:  # fmt: skip
        args = (f"/schedules/{schedule_id}{path}",) + (() if method in ("get", "delete") else ({},))
        response = getattr(umbrella_api, method)(*args)
        assert response.status_code == 404, (method, path, response.content)
    assert Schedule.objects.get(public_id=schedule_id).enabled


def test_a_refused_launch_is_in_the_history_and_counts_toward_the_pause(api):
    schedule_id = create(api)["id"]
    # A field that was valid when the schedule was made and is not at firing time (a limit lowered, say).
    Schedule.objects.filter(public_id=schedule_id).update(run={**RUN, "max_turns": 0})
    for n in range(3):
        tasks.fire(schedule_id, minute(n).isoformat())
    schedule = api.get(f"/schedules/{schedule_id}").json()
    assert not Run.objects.exists()
    assert [h["error"].startswith("max_turns: ") for h in schedule["history"]] == [True, True, True]
    assert not schedule["enabled"] and "could not be launched: max_turns" in schedule["paused_reason"]


def test_beat_rows_go_with_a_schedule_however_it_is_deleted(api, acme):
    create(api)
    create(api, name="Second")
    crontabs = list(PeriodicTask.objects.filter(task=services.FIRE_TASK).values_list("crontab_id", flat=True))
    assert len(crontabs) == 2
    acme.delete()  # the workspace's schedules cascade
    assert not PeriodicTask.objects.filter(task=services.FIRE_TASK).exists()
    assert not CrontabSchedule.objects.filter(pk__in=crontabs).exists()
