"""A batch of browser sessions finished with their client's claim: each session's run joins the batch (a task per
distinct task, one configuration, model external), nothing is launched, and the batch reads like any other. Sessions
go through the service as the API and the worker drive them."""

import pytest

from browsers import services
from browsers.models import BrowserSession
from evals.models import Batch
from runs.models import Run

pytestmark = pytest.mark.django_db


def running(workspace) -> BrowserSession:
    session = services.create_session(workspace)
    services.claim(session.pk, worker="worker-1@host")
    services.mark_running(session, "127.0.0.1:1", "/tmp/downloads")
    return session


def finished(workspace, task: str, success: bool = True) -> BrowserSession:
    """A session its client finished with a claim, stopped by the worker: it has become its run."""
    session = running(workspace)
    services.finish(session, task=task, output="Done: 12.99", success=success)
    services.end(session, BrowserSession.StopReason.FINISHED)
    session.refresh_from_db()
    assert session.run is not None
    return session


def test_finished_sessions_make_a_batch_of_their_runs(api, acme, alice_client):
    sessions = [
        finished(acme, "Find the price of the kettle"),
        finished(acme, "Add the kettle to the cart", success=False),
        finished(acme, "Find the price of the kettle"),
    ]
    response = api.post(
        "/batches/of-browser-sessions", {"name": "my agent", "browser_session_ids": [s.public_id for s in sessions]}
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "finished" and body["name"] == "my agent"

    batch = Batch.objects.get(public_id=body["id"])
    assert [task.task for task in batch.tasks.all()] == ["Find the price of the kettle", "Add the kettle to the cart"]
    assert [(config.model, config.max_turns) for config in batch.configs.all()] == [("external", 30)]
    items = {item.run_id: (item.task.position, item.repeat) for item in batch.items.select_related("task")}
    assert items == {sessions[0].run_id: (0, 0), sessions[1].run_id: (1, 0), sessions[2].run_id: (0, 1)}
    assert batch.repeats == 2 and not batch.judge
    assert not Run.objects.exclude(pk__in=[s.run_id for s in sessions]).exists(), "nothing was launched"

    runs = api.get(f"/batches/{batch.public_id}/runs").json()["runs"]
    assert sorted(row["run_id"] for row in runs) == sorted(s.run.public_id for s in sessions)
    assert sorted((row["status"], row["success"]) for row in runs) == [
        ("failed", False),
        ("succeeded", True),
        ("succeeded", True),
    ]
    assert alice_client.get(f"/batches/{batch.public_id}/").status_code == 200


def test_only_finished_sessions_of_the_workspace_join_a_batch(api, umbrella_api, acme, umbrella):
    done = finished(acme, "Find the price of the kettle")
    still_running = running(acme)
    theirs = finished(umbrella, "Something else")

    def refused(client, ids: list[str], status: int) -> str:
        response = client.post("/batches/of-browser-sessions", {"browser_session_ids": ids})
        assert response.status_code == status, response.content
        return response.json()["error"]["message"]

    message = refused(api, [done.public_id, still_running.public_id], 409)
    assert message.startswith("browser_session_ids[1]: ") and "has not finished with a claim" in message
    assert refused(api, [done.public_id, theirs.public_id], 404).startswith("browser_session_ids[1]: ")
    assert "named twice" in refused(api, [done.public_id, done.public_id], 400)
    # Umbrella's key cannot batch Acme's session, nor learn that it exists
    assert refused(umbrella_api, [done.public_id], 404).startswith("browser_session_ids[0]: No browser session")
    assert not Batch.objects.exists()


def test_the_sessions_list_shows_status_duration_creator_cost_and_run(alice, alice_client, acme):
    mine = services.create_session(acme, created_by=alice)
    done = finished(acme, "Find the price of the kettle")
    html = alice_client.get("/browsers/").content.decode()
    rows = html[html.index('id="browser-sessions"') :]
    mine_row = rows[rows.index(mine.public_id) :].split("</tr>")[0]
    assert "st-queued" in mine_row and ">alice<" in mine_row and "0 s" in mine_row and "$0.00" in mine_row
    done_row = rows[rows.index(done.public_id) :].split("</tr>")[0]
    assert "st-stopped" in done_row and "Finished" in done_row and done.run.public_id in done_row
