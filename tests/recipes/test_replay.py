"""Recipes end to end with a real worker, Chromium and the demo site: a judged contact-form run made a recipe, replayed
with other parameters without the agent, healed where the page changed, and its proposed version replayed in turn."""

import json
import os

import pytest
from django.db import connection
from playwright.sync_api import expect

from agent_platform.models import ModelRequest
from demo_site import views as demo_views
from runs.models import Run
from runs.recipes.models import Recipe, RecipeVersion, Replay
from scripted_api.wire import text_reply
from tests import messages_stub as stub_fixtures
from tests.support import demo, factories, live, workers
from tests.support.judging import judgment_reply
from tests.support.launching import enqueue, events, finished, launch_through_api, launches_held, wait_for
from tests.support.live import signed_in_page
from tests.support.recipes import (
    CONTACT_SCHEMA,
    click_button,
    contact_task,
    contact_url,
    done_with,
    fill_and_send,
    read_form,
    replay_through_api,
)

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker
demo_base_url = demo.demo_base_url
launches_held = launches_held
prices = factories.prices
asgi_server = live.asgi_server
chromium = live.chromium

# Playwright's sync API keeps an event loop on this thread; the ORM calls between its calls are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def requests_of(run: Run, source: str) -> int:
    return ModelRequest.objects.filter(run=run, source=source).count()


def source_run(api, messages_stub, demo_base_url: str, *, judge: bool = True) -> Run:
    """The contact form sent as Ada Lovelace by the scripted agent, judged pass."""
    messages_stub.agent(
        read_form(), fill_and_send("Ada Lovelace", "ada@example.com"), done_with("Ada Lovelace", "ada@example.com")
    )
    if judge:
        messages_stub.judge(judgment_reply("pass", "The thanks page shows the message was sent."))
    run = finished(
        launch_through_api(
            api,
            task=contact_task("Ada Lovelace", "ada@example.com"),
            start_url=contact_url(demo_base_url),
            output_schema=CONTACT_SCHEMA,
            judge=judge,
        )
    )
    assert run.status == Run.Status.SUCCEEDED, (run.error_code, run.error_message)
    if judge:
        wait_for(lambda: run.judgments.exists(), message="the source run's judgment")
    return run


def make_recipe(api, run: Run) -> dict:
    made = api.post(
        f"/runs/{run.public_id}/recipe",
        {"name": "Contact form", "parameters": {"name": "Ada Lovelace", "email": "ada@example.com"}},
    )
    assert made.status_code == 201, made.content
    return made.json()


def replay(api, recipe_id: str, **parameters: str) -> Run:
    return finished(replay_through_api(api, recipe_id=recipe_id, parameters=parameters))


def test_a_recipe_of_a_judged_run_replays_with_other_parameters_without_the_agent(
    api, messages_stub, runtime_worker, celery_worker, demo_base_url, launches_held, prices
):
    """(celery_worker judges the source run.)"""
    run = source_run(api, messages_stub, demo_base_url)
    recipe = make_recipe(api, run)

    assert [step["line"] for step in recipe["steps"]] == [
        "set textbox 'Your name' to '{{name}}'",
        "set textbox 'Email address' to '{{email}}'",
        "set combobox 'Topic' to 'order'",
        "set textbox 'Message' to 'Where is my order?'",
        "click button 'Send message'",
    ]
    click = recipe["steps"][-1]
    assert click["target"] == {"role": "button", "name": "Send message", "nth": 0, "frame": None}
    assert click["url"] == f"{demo_base_url}demo/contact/thanks/" and len(click["fingerprint"]) == 16
    assert "ref" not in json.dumps(recipe["steps"]).replace("referer", "")
    assert recipe["parameters"] == [
        {"name": "name", "default": "Ada Lovelace"},
        {"name": "email", "default": "ada@example.com"},
    ]
    assert recipe["task"] == contact_task("{{name}}", "{{email}}")

    messages_stub.agent(text_reply('{"name": "Grace Hopper", "email": "grace@example.com"}'))
    replayed = replay(api, recipe["id"], name="Grace Hopper", email="grace@example.com")

    assert replayed.status == Run.Status.SUCCEEDED, (replayed.error_code, replayed.error_message)
    assert replayed.data == {"name": "Grace Hopper", "email": "grace@example.com"}
    assert (requests_of(replayed, "agent"), requests_of(replayed, "extraction")) == (0, 1)
    final = events(replayed, "agent.final_view")[-1].payload
    assert "Thank you, Grace Hopper!" in final["text"] and "grace@example.com" in final["text"]
    steps = events(replayed, "recipe.step")
    assert [(e.payload["step"], e.payload["done"]) for e in steps] == [(n, True) for n in range(1, 6)]
    assert steps[0].payload["line"] == "set textbox 'Your name' to 'Grace Hopper'"
    assert not events(replayed, "recipe.healing")

    body = api.get(f"/runs/{replayed.public_id}").json()["recipe"]
    assert body["recipe_id"] == recipe["id"] and body["version"] == 1
    assert (body["replayed_steps"], body["healed_from_step"]) == (5, None)
    run.refresh_from_db()
    source_cost = run.cost_usd  # its agent's requests and its judge's
    assert source_cost > replayed.cost_usd > 0
    wait_for(lambda: Replay.objects.get(run=replayed).cost_saved_usd is not None, message="the saving")
    assert Replay.objects.get(run=replayed).cost_saved_usd == source_cost - replayed.cost_usd
    runs_listed = api.get(f"/recipes/{recipe['id']}").json()["runs"]
    assert [listed["run_id"] for listed in runs_listed] == [replayed.public_id]


def test_a_renamed_button_heals_at_its_step_and_the_proposed_version_replays_without_the_agent(
    api, messages_stub, runtime_worker, demo_base_url, launches_held, prices, monkeypatch
):
    run = source_run(api, messages_stub, demo_base_url, judge=False)
    recipe = make_recipe(api, run)
    monkeypatch.setattr(demo_views, "SEND_BUTTON_LABEL", "Submit")  # the shop reworded its button

    messages_stub.agent(read_form(), click_button("Submit"), done_with("Grace Hopper", "grace@example.com"))
    healed = replay(api, recipe["id"], name="Grace Hopper", email="grace@example.com")

    assert healed.status == Run.Status.SUCCEEDED, (healed.error_code, healed.error_message)
    [healing] = events(healed, "recipe.healing")
    assert healing.payload["step"] == 5 and "target is not on the page" in healing.payload["why"]
    first_request = messages_stub.requests[-3]
    hint = first_request["messages"][0]["content"][-1]["text"]
    assert "replayed its first 4 steps" in hint and "5. click button 'Send message'" in hint
    assert "Grace Hopper" in first_request["messages"][0]["content"][0]["text"]
    assert requests_of(healed, "agent") == 3 and requests_of(healed, "extraction") == 0
    body = api.get(f"/runs/{healed.public_id}").json()["recipe"]
    assert (body["replayed_steps"], body["healed_from_step"]) == (4, 5)
    wait_for(lambda: RecipeVersion.objects.filter(recipe__public_id=recipe["id"], number=2).exists(), message="v2")
    proposed = api.get(f"/recipes/{recipe['id']}").json()
    assert proposed["version"] == 1, "a proposal waits for the operator"
    v2 = next(version for version in proposed["versions"] if version["number"] == 2)
    assert v2["status"] == "proposed" and v2["source_run"] == healed.public_id
    assert [step["line"] for step in v2["steps"]][-1] == "click button 'Submit'"
    assert [step["value"] for step in v2["steps"]][:2] == ["{{name}}", "{{email}}"]

    accepted = api.post(f"/recipes/{recipe['id']}/versions/2/accept", {})
    assert accepted.status_code == 200 and accepted.json()["version"] == 2
    messages_stub.agent(text_reply('{"name": "Alan Turing", "email": "alan@example.com"}'))
    again = replay(api, recipe["id"], name="Alan Turing", email="alan@example.com")

    assert again.status == Run.Status.SUCCEEDED, (again.error_code, again.error_message)
    assert again.data == {"name": "Alan Turing", "email": "alan@example.com"}
    assert (requests_of(again, "agent"), requests_of(again, "extraction")) == (0, 1)
    assert Replay.objects.get(run=again).version.number == 2


def test_a_secret_typed_step_keeps_its_placeholder_and_replays_the_runs_secret(
    api, messages_stub, runtime_worker, demo_base_url, launches_held, prices
):
    secret_name = "Ada Secretname"
    messages_stub.agent(
        read_form(),
        fill_and_send("{{secret:CONTACT_NAME}}", "ada@example.com"),
        done_with("Ada", "ada@example.com"),
    )
    run = finished(
        launch_through_api(
            api,
            task="Send the contact form with the name in CONTACT_NAME, and report the name and email.",
            start_url=contact_url(demo_base_url),
            output_schema=CONTACT_SCHEMA,
            secrets={"CONTACT_NAME": secret_name},
        )
    )
    assert run.status == Run.Status.SUCCEEDED, (run.error_code, run.error_message)
    made = api.post(f"/runs/{run.public_id}/recipe", {})
    assert made.status_code == 201, made.content
    recipe = made.json()
    assert recipe["steps"][0]["value"] == "{{secret:CONTACT_NAME}}"
    stored = json.dumps([version.steps for version in Recipe.objects.get(public_id=recipe["id"]).versions.all()])
    assert secret_name not in stored and "{{secret:CONTACT_NAME}}" in stored

    refused = api.post("/runs", {"recipe_id": recipe["id"]})
    assert refused.status_code == 400 and "CONTACT_NAME" in refused.json()["error"]["message"]

    other = "Grace Secretname"
    messages_stub.agent(text_reply('{"name": "Grace", "email": "ada@example.com"}'))
    replayed = finished(replay_through_api(api, recipe_id=recipe["id"], secrets={"CONTACT_NAME": other}))

    assert replayed.status == Run.Status.SUCCEEDED, (replayed.error_code, replayed.error_message)
    assert requests_of(replayed, "agent") == 0
    extraction_request = json.dumps(messages_stub.requests[-1])
    assert other not in extraction_request, "the page's echo of the secret reaches the model masked"
    assert "{{secret:CONTACT_NAME}}" in extraction_request
    assert other not in json.dumps([event.payload for event in events(replayed)])


def test_a_page_watching_a_replay_that_asks_no_model_ends_saying_it_asked_none(
    api, messages_stub, runtime_worker, demo_base_url, launches_held, asgi_server, chromium, alice
):
    """Replayed with its source's parameters, the thanks page reads as the source's did: its data stands, no model is
    asked, and the page that watched it live says so once it has finished (not "yet", not "so far")."""
    recipe = make_recipe(api, source_run(api, messages_stub, demo_base_url, judge=False))
    launched = api.post("/runs", {"recipe_id": recipe["id"], "parameters": {}})
    assert launched.status_code == 201, launched.content
    replayed = Run.objects.get(public_id=launched.json()["id"])
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{replayed.public_id}/")
    expect(page.locator("#usage-none")).to_contain_text("No model requests so far: a replay asks a model only")
    page.wait_for_function("window.Pilothouse && window.Pilothouse.runSocket")

    enqueue(replayed)
    expect(page.locator("#run-status")).to_have_text("succeeded", timeout=120_000)
    expect(page.locator("#usage-none")).to_have_text(
        "No model requests: the replay followed its recipe's steps and asked no model."
    )
    expect(page.locator("#usage")).not_to_contain_text("yet")
    replayed.refresh_from_db()
    assert replayed.status == Run.Status.SUCCEEDED, (replayed.error_code, replayed.error_message)
    assert not ModelRequest.objects.filter(run=replayed).exists()
    page.context.close()
    connection.close()
