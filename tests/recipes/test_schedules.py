"""A schedule whose run names a recipe: checked when it is saved, and each firing launches a replay that a real worker
runs without the agent."""

from datetime import UTC, datetime

import pytest

from agent_platform.models import ModelRequest
from runs.models import Run
from runs.recipes.models import Replay
from schedules import tasks
from schedules.models import Firing, Schedule
from scripted_api.wire import text_reply
from tests import messages_stub as stub_fixtures
from tests.support import demo, factories, workers
from tests.support.launching import enqueue, finished, launch_through_api, launches_held
from tests.support.recipes import CONTACT_SCHEMA, contact_task, contact_url, done_with, fill_and_send, read_form

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker
demo_base_url = demo.demo_base_url
launches_held = launches_held
prices = factories.prices

NOW = datetime(2026, 12, 3, 7, 0, 5, tzinfo=UTC)


def schedule(api, run: dict) -> dict:
    return api.post("/schedules", {"name": "Contact form", "cron": "0 7 * * *", "timezone": "UTC", "run": run})


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_a_schedule_naming_a_recipe_launches_a_replay_that_needs_no_agent(
    api, messages_stub, runtime_worker, demo_base_url, launches_held, prices
):
    messages_stub.agent(
        read_form(), fill_and_send("Ada Lovelace", "ada@example.com"), done_with("Ada Lovelace", "ada@example.com")
    )
    source = finished(
        launch_through_api(
            api,
            task=contact_task("Ada Lovelace", "ada@example.com"),
            start_url=contact_url(demo_base_url),
            output_schema=CONTACT_SCHEMA,
        )
    )
    assert source.status == Run.Status.SUCCEEDED, source.error_message
    recipe_id = api.post(f"/runs/{source.public_id}/recipe", {"parameters": {"name": "Ada Lovelace"}}).json()["id"]

    created = schedule(api, {"recipe_id": recipe_id, "parameters": {"name": "Grace Hopper"}, "max_turns": 5})
    assert created.status_code == 201, created.content
    assert created.json()["run"] == {"recipe_id": recipe_id, "parameters": {"name": "Grace Hopper"}, "max_turns": 5}

    tasks.fire(created.json()["id"], NOW.isoformat())
    tasks.fire(created.json()["id"], NOW.isoformat())  # a second beat: the same firing
    [firing] = Firing.objects.filter(schedule__public_id=created.json()["id"])
    replay = Replay.objects.get(run=firing.run)
    assert replay.recipe.public_id == recipe_id and replay.parameters == {"name": "Grace Hopper"}
    assert firing.run.task == contact_task("Grace Hopper", "ada@example.com")

    messages_stub.agent(text_reply('{"name": "Grace Hopper", "email": "ada@example.com"}'))
    run = finished(enqueue(firing.run))
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert run.data == {"name": "Grace Hopper", "email": "ada@example.com"}
    assert not ModelRequest.objects.filter(run=run, source="agent").exists()
    assert api.get(f"/schedules/{created.json()['id']}").json()["history"][0]["run_id"] == run.public_id


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("run", "field"),
    [
        ({"recipe_id": "rcp_unknown"}, "run.recipe_id"),
        ({"recipe_id": "{recipe}", "parameters": {"colour": "red"}}, "run.parameters.colour"),
        ({"recipe_id": "{recipe}", "task": "Something else."}, "run.task"),
        ({"recipe_id": "{recipe}", "secrets": {"NAME": "secret value"}}, "run.secrets"),
    ],
)
def test_a_recipe_schedule_is_checked_when_saved(api, acme, run, field):
    from runs.recipes.models import Recipe, RecipeVersion

    recipe = Recipe.objects.create(workspace=acme, name="Contact", task="Send it as {{name}}.")
    RecipeVersion.objects.create(
        recipe=recipe, number=1, steps=[{"action": "navigate", "value": "https://shop.example.com/"}],
        parameters=[{"name": "name", "default": "Ada"}],
    )  # fmt: skip
    body = {key: (recipe.public_id if value == "{recipe}" else value) for key, value in run.items()}
    response = schedule(api, body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"].startswith(f"{field}: "), response.json()
    assert not Schedule.objects.exists()


@pytest.mark.django_db
def test_a_recipe_that_types_a_secret_cannot_be_scheduled(api, acme):
    from runs.recipes.models import Recipe, RecipeVersion

    recipe = Recipe.objects.create(workspace=acme, name="Sign in", task="Sign in.")
    RecipeVersion.objects.create(
        recipe=recipe, number=1, steps=[{"action": "type", "target": None, "value": "{{secret:PASSWORD}}"}]
    )
    response = schedule(api, {"recipe_id": recipe.public_id})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "run.recipe_id: the recipe types secrets (PASSWORD), which a schedule cannot keep"
    )
