"""The recipe pages: Make recipe on a run's page, the recipe's steps as readable lines with what came from the web
escaped, its parameters edited, a proposed version accepted; another workspace's recipe is a 404."""

import pytest

from runs.recipes import services
from runs.recipes.models import Recipe, RecipeVersion
from tests.support.recipes import play_contact_run

pytestmark = pytest.mark.django_db


def test_make_recipe_on_the_run_page_and_the_recipe_page_reads_its_steps(alice_client, acme):
    run = play_contact_run(acme)
    assert b"Make recipe" in alice_client.get(f"/runs/{run.public_id}/").content

    made = alice_client.post(
        f"/runs/{run.public_id}/recipe/", {"name": "Contact", "parameters": "customer = Ada Lovelace"}
    )
    assert made.status_code == 302
    recipe = Recipe.objects.get()
    page = alice_client.get(made["Location"]).content.decode()
    assert "set textbox &#x27;Your name&#x27; to &#x27;{{customer}}&#x27;" in page
    assert "click button &#x27;Send message&#x27;" in page
    assert 'name="param-customer" value="Ada Lovelace"' in page

    alice_client.post(f"/recipes/{recipe.public_id}/update/", {"param-customer": "Grace", "auto_accept": "on"})
    recipe.refresh_from_db()
    assert recipe.auto_accept and recipe.current().parameters == [{"name": "customer", "default": "Grace"}]


def test_a_bad_parameters_box_is_refused_naming_it(alice_client, acme):
    run = play_contact_run(acme)
    refused = alice_client.post(f"/runs/{run.public_id}/recipe/", {"parameters": "just a value"})
    assert refused.status_code == 400 and b"parameters: line 1" in refused.content
    assert not Recipe.objects.exists()


def test_a_button_named_by_a_hostile_page_is_escaped(alice_client, acme):
    run = play_contact_run(acme, button="<img src=x onerror=alert(1)>")
    recipe = services.make_recipe(run)
    page = alice_client.get(f"/recipes/{recipe.public_id}/").content.decode()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_proposed_version_is_accepted_from_the_page(alice_client, acme):
    recipe = services.make_recipe(play_contact_run(acme))
    RecipeVersion.objects.create(recipe=recipe, number=2, status="proposed", steps=recipe.current().steps)
    page = alice_client.get(f"/recipes/{recipe.public_id}/").content.decode()
    assert "Accept" in page and "proposed" in page
    alice_client.post(f"/recipes/{recipe.public_id}/versions/2/", {"decision": "accept"})
    assert recipe.current().number == 2


def test_another_workspaces_recipe_is_a_404(alice_client, charlie_client, acme):
    run = play_contact_run(acme)
    recipe = services.make_recipe(run)
    assert charlie_client.get(f"/recipes/{recipe.public_id}/").status_code == 404
    assert charlie_client.post(f"/recipes/{recipe.public_id}/update/", {"auto_accept": "on"}).status_code == 404
    assert charlie_client.post(f"/runs/{run.public_id}/recipe/", {}).status_code == 404
    assert charlie_client.post(f"/recipes/{recipe.public_id}/replay/", {}).status_code == 404
    assert recipe.public_id not in charlie_client.get("/recipes/").content.decode()


def test_a_replays_page_reads_its_steps_and_healing_as_lines_and_links_its_recipe(alice_client, acme):
    from runs.events import emit
    from runs.recipes.models import Replay
    from tests.support.factories import make_run

    recipe = services.make_recipe(play_contact_run(acme))
    run = make_run(acme, task=recipe.task)
    Replay.objects.create(run=run, recipe=recipe, version=recipe.current(), replayed_steps=2, healed_from_step=3)
    emit(run, "recipe.step", {"step": 1, "line": "set textbox 'Your name' to 'Grace'", "done": True})
    emit(run, "recipe.healing", {"step": 3, "why": "its target <b>is not</b> on the page"})
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "Recipe step 1 · set textbox &#x27;Your name&#x27; to &#x27;Grace&#x27;" in page
    assert "Healing from step 3: its target &lt;b&gt;is not&lt;/b&gt; on the page" in page
    assert f'href="/recipes/{recipe.public_id}/"' in page and "2 steps replayed, healed from step 3" in page


def test_a_finished_replay_with_no_model_request_says_it_asked_none_not_yet(alice_client, acme):
    from runs.events import emit
    from runs.models import Run
    from runs.recipes.models import Replay
    from tests.support.factories import make_run

    recipe = services.make_recipe(play_contact_run(acme))
    run = make_run(acme, task=recipe.task, status=Run.Status.RUNNING)
    Replay.objects.create(run=run, recipe=recipe, version=recipe.current(), replayed_steps=2)
    running = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "No model requests so far: a replay asks a model only" in running

    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED, success=True)
    emit(run, "run.finished", {"status": "succeeded", "success": True})
    for html in (
        alice_client.get(f"/runs/{run.public_id}/").content.decode(),
        alice_client.get(f"/runs/{run.public_id}/summary/").content.decode(),  # what the live page re-reads
    ):
        assert "No model requests yet" not in html and "so far" not in html
        assert "No model requests: the replay followed its recipe's steps and asked no model." in html
