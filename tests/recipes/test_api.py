"""The recipes API: a recipe made from a run's events, what it refuses (a run that did not succeed, an action on a
point, a value no step typed), its changes and versions, and another workspace's 404."""

import pytest

from runs.recipes.models import Recipe, RecipeVersion, Replay
from tests.support.factories import make_run
from tests.support.launching import launches_held
from tests.support.recipes import play_contact_run

pytestmark = pytest.mark.django_db
launches_held = launches_held


def test_a_recipe_keeps_each_actions_target_value_and_checkpoint_never_a_ref(api, acme):
    run = play_contact_run(acme)
    made = api.post(f"/runs/{run.public_id}/recipe", {"parameters": {"customer": "Ada Lovelace"}})

    assert made.status_code == 201, made.content
    recipe = made.json()
    assert recipe["id"].startswith("rcp_") and recipe["version"] == 1 and recipe["source_run"] == run.public_id
    assert recipe["name"] == "Send the contact form as Ada Lovelace."
    assert recipe["task"] == "Send the contact form as {{customer}}."
    assert [step["line"] for step in recipe["steps"]] == [
        "set textbox 'Your name' to '{{customer}}'",
        "set textbox 'Email address' to 'ada@example.com'",
        "click button 'Send message'",
    ]
    assert recipe["steps"][2]["target"] == {"role": "button", "name": "Send message", "nth": 0, "frame": None}
    assert [step["url"] for step in recipe["steps"]][-1] == "https://shop.example.com/contact/thanks/"
    assert "e26" not in str(recipe["steps"]) and "e14" not in str(recipe["steps"])
    assert recipe["parameters"] == [{"name": "customer", "default": "Ada Lovelace"}]
    assert api.get("/recipes").json()["recipes"][0]["id"] == recipe["id"]
    assert RecipeVersion.objects.get().last_done["output"] == "Sent as Ada Lovelace."


def test_a_run_that_did_not_succeed_is_a_conflict(api, acme):
    failed = make_run(acme, status="failed", success=False)
    response = api.post(f"/runs/{failed.public_id}/recipe", {})
    assert response.status_code == 409 and response.json()["error"]["type"] == "conflict"
    assert not Recipe.objects.exists()


def test_an_action_on_a_point_of_the_page_cannot_be_replayed(api, acme):
    run = play_contact_run(acme, coordinate=True)
    response = api.post(f"/runs/{run.public_id}/recipe", {})
    assert response.status_code == 400
    assert "left_click at turn 3 acted on a point of the page" in response.json()["error"]["message"]


def test_a_parameter_no_step_typed_is_refused_naming_it(api, acme):
    run = play_contact_run(acme)
    response = api.post(f"/runs/{run.public_id}/recipe", {"parameters": {"phone": "555-0100"}})
    assert response.status_code == 400
    assert "parameters.phone: its value is typed by none" in response.json()["error"]["message"]
    bad_name = api.post(f"/runs/{run.public_id}/recipe", {"parameters": {"Phone Number": "x"}})
    assert bad_name.status_code == 400


def test_parameters_and_auto_accept_change_and_a_version_that_is_not_proposed_is_a_conflict(api, acme):
    run = play_contact_run(acme)
    recipe_id = api.post(f"/runs/{run.public_id}/recipe", {"parameters": {"customer": "Ada Lovelace"}}).json()["id"]

    changed = api.patch(f"/recipes/{recipe_id}", {"auto_accept": True, "parameters": {"customer": "Grace"}})
    assert changed.status_code == 200, changed.content
    assert changed.json()["auto_accept"] and changed.json()["parameters"] == [{"name": "customer", "default": "Grace"}]
    unknown = api.patch(f"/recipes/{recipe_id}", {"parameters": {"colour": "red"}})
    assert unknown.status_code == 400 and "parameters.colour" in unknown.json()["error"]["message"]

    assert api.post(f"/recipes/{recipe_id}/versions/1/accept", {}).status_code == 409
    assert api.post(f"/recipes/{recipe_id}/versions/7/accept", {}).status_code == 404


def test_a_replay_launch_refuses_what_its_recipe_decides(api, acme):
    run = play_contact_run(acme)
    recipe_id = api.post(f"/runs/{run.public_id}/recipe", {"parameters": {"customer": "Ada Lovelace"}}).json()["id"]
    for body, field in (
        ({"recipe_id": recipe_id, "task": "Other."}, "task"),
        ({"recipe_id": recipe_id, "parameters": {"colour": "red"}}, "parameters.colour"),
        ({"recipe_id": "rcp_" + "0" * 24}, "recipe_id"),
        ({"task": "Do it.", "parameters": {"customer": "x"}}, "parameters"),
        ({}, "task"),
    ):
        response = api.post("/runs", body)
        assert response.status_code == 400, (body, response.content)
        assert f"{field}: " in response.json()["error"]["message"], response.json()


def test_another_workspace_sees_404(api, umbrella_api, acme):
    run = play_contact_run(acme)
    recipe_id = api.post(f"/runs/{run.public_id}/recipe", {}).json()["id"]
    assert umbrella_api.post(f"/runs/{run.public_id}/recipe", {}).status_code == 404
    assert umbrella_api.get(f"/recipes/{recipe_id}").status_code == 404
    assert umbrella_api.patch(f"/recipes/{recipe_id}", {"auto_accept": True}).status_code == 404
    assert umbrella_api.post(f"/recipes/{recipe_id}/versions/1/accept", {}).status_code == 404
    assert umbrella_api.get("/recipes").json()["recipes"] == []
    launched = umbrella_api.post("/runs", {"recipe_id": recipe_id})
    assert launched.status_code == 400 and "no recipe" in launched.json()["error"]["message"]


def test_a_retried_replay_with_the_same_key_is_the_same_run_and_other_parameters_are_a_conflict(
    api, acme, launches_held
):
    run = play_contact_run(acme)
    # the email is typed but not in the task: only the fingerprint tells two replays with other emails apart
    recipe_id = api.post(f"/runs/{run.public_id}/recipe", {"parameters": {"email": "ada@example.com"}}).json()["id"]
    body = {"recipe_id": recipe_id, "parameters": {"email": "grace@example.com"}}
    first = api.post("/runs", body, headers={"Idempotency-Key": "replay-1"})
    again = api.post("/runs", body, headers={"Idempotency-Key": "replay-1"})
    assert first.status_code == again.status_code == 201 and first.json()["id"] == again.json()["id"]
    assert again["Idempotent-Replayed"] == "true"
    assert Replay.objects.filter(recipe__public_id=recipe_id).count() == 1

    other_email = {**body, "parameters": {"email": "alan@example.com"}}
    other = api.post("/runs", other_email, headers={"Idempotency-Key": "replay-1"})
    assert other.status_code == 409
