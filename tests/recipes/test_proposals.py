"""When a healed replay proposes a version: once it succeeded, and when judged only once its judge passed it;
accepted at once on a recipe that auto-accepts; what a replay saved, set when it ends."""

import pytest

from judge.models import Judgment
from runs.events import emit
from runs.lifecycle import finish, mark_started
from runs.recipes import services
from runs.recipes.models import RecipeVersion, Replay
from tests.support.factories import make_run
from tests.support.recipes import play_contact_run

pytestmark = pytest.mark.django_db(transaction=True)


def healed_replay(acme, recipe, *, judge: bool, status: str = "succeeded"):
    """A replay that did the first two steps, healed at the third, and whose agent clicked a button named Submit."""
    version = recipe.current()
    run = make_run(acme, task=recipe.task, judge=judge)
    replay = Replay.objects.create(run=run, recipe=recipe, version=version, parameters={"customer": "Grace"})
    mark_started(run, "tests")
    for number, step in enumerate(version.steps[:2], start=1):
        emit(run, "recipe.step", {"step": number, "line": "", "done": True, "acted": True, "recipe_step": step})
    emit(run, "recipe.step", {"step": 3, "line": "", "done": False, "acted": False, "recipe_step": version.steps[2]})
    Replay.objects.filter(pk=replay.pk).update(replayed_steps=2, healed_from_step=3)
    click = {"type": "ref", "ref": "e30"}
    emit(
        run, "agent.tool_use", {"id": "toolu_9", "name": "left_click", "toolset": "browser", "input": {"target": click}}
    )
    target = {"role": "button", "name": "Submit", "nth": 0, "frame": None}
    emit(
        run,
        "agent.target",
        {"tool_use_id": "toolu_9", "member": "left_click", "target": target, "url": "u", "fingerprint": "f"},
    )
    finish(run, status, success=status == "succeeded", output="Sent.")
    run.refresh_from_db()
    return run


def test_a_healed_unjudged_run_proposes_its_working_steps_at_once(acme):
    recipe = services.make_recipe(play_contact_run(acme, name="Ada"), parameters={"customer": "Ada"})
    run = healed_replay(acme, recipe, judge=False)

    proposed = RecipeVersion.objects.get(recipe=recipe, number=2)
    assert proposed.status == "proposed" and proposed.source_run == run
    assert [step["action"] for step in proposed.steps] == ["form_input", "form_input", "left_click"]
    assert proposed.steps[0]["value"] == "{{customer}}" and proposed.steps[2]["target"]["name"] == "Submit"
    assert recipe.current().number == 1
    assert Replay.objects.get(run=run).cost_saved_usd is not None


def test_a_judged_healed_run_proposes_only_once_its_judge_passed_it(acme, monkeypatch):
    # the judgments are the test's: no judge task goes to a worker, whose own reading would come last
    monkeypatch.setattr("runs.lifecycle.judge_on_finish", lambda run: None)
    recipe = services.make_recipe(play_contact_run(acme))
    recipe.auto_accept = True
    recipe.save()
    run = healed_replay(acme, recipe, judge=True)
    assert not RecipeVersion.objects.filter(number=2).exists(), "not before its judgment"

    Judgment.objects.create(run=run, verdict="fail", reason="The form was not sent.")
    emit(run, "run.judged", {"verdict": "fail"})
    assert not RecipeVersion.objects.filter(number=2).exists()

    Judgment.objects.create(run=run, verdict="pass", reason="Sent.")
    emit(run, "run.judged", {"verdict": "pass"})
    emit(run, "run.judged", {"verdict": "pass"})  # a re-judgment proposes nothing more
    assert RecipeVersion.objects.filter(recipe=recipe).count() == 2
    assert recipe.current().number == 2, "the recipe accepts healed versions automatically"


def test_a_healed_run_that_failed_proposes_nothing(acme):
    recipe = services.make_recipe(play_contact_run(acme))
    healed_replay(acme, recipe, judge=False, status="failed")
    assert RecipeVersion.objects.filter(recipe=recipe).count() == 1
