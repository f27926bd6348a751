"""MCP's tools for a person in the loop, files and recipes, through the official client against Daphne: pause, a
message, answering and handing back; save_profile and file_ids at launch; a run's files; a recipe made from a run and
replayed. Another workspace's key is refused each of them as the API refuses it (not_found)."""

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from runs.files import store_file
from runs.models import Event, Run, RunInput, RunMessage
from runs.profiles.models import Profile
from runs.recipes.models import Replay
from runs.recipes.services import make_recipe
from tests.support import live
from tests.support.factories import make_run
from tests.support.mcp_client import call, data_of, text_of
from tests.support.recipes import play_contact_run

asgi_server = live.asgi_server

pytestmark = pytest.mark.usefixtures("transactional_db")


def refusal(result) -> str:
    assert result.is_error, result.structured_content
    return text_of(result)


def test_a_person_pauses_answers_messages_and_hands_back_through_mcp(asgi_server, acme, acme_key):
    url = f"{asgi_server}/mcp"
    run = make_run(acme, status=Run.Status.RUNNING, started_at=timezone.now())
    asked = RunInput.objects.create(run=run, question="Which account?")

    paused = data_of(call(url, acme_key, "pause_run", {"run_id": run.public_id}))
    assert paused["paused"] is True
    answered = data_of(call(url, acme_key, "answer_input", {"run_id": run.public_id, "text": "The shop one."}))
    assert answered["pending_input"] is None
    data_of(call(url, acme_key, "send_message", {"run_id": run.public_id, "text": "Only 2026 invoices."}))
    resumed = data_of(call(url, acme_key, "resume_run", {"run_id": run.public_id, "note": "Signed in for you."}))
    assert resumed["paused"] is False

    asked.refresh_from_db()
    assert (asked.state, asked.answer) == (RunInput.State.ANSWERED, "The shop one.")
    assert [m.text for m in RunMessage.objects.filter(run=run).order_by("id")] == [
        "Only 2026 invoices.",
        "Signed in for you.",
    ]
    kinds = list(Event.objects.filter(run=run).order_by("seq").values_list("type", flat=True))
    assert kinds == ["run.paused", "run.input_received", "run.message_queued", "run.resumed"]

    ended = make_run(acme, status=Run.Status.SUCCEEDED)
    assert refusal(call(url, acme_key, "pause_run", {"run_id": ended.public_id})).startswith("conflict:")
    assert refusal(call(url, acme_key, "send_message", {"run_id": ended.public_id, "text": "x"})).startswith(
        "conflict:"
    )


def test_launch_takes_save_profile_and_file_ids_and_a_runs_files_are_listed(asgi_server, acme, acme_key):
    url = f"{asgi_server}/mcp"
    profile = Profile.objects.create(workspace=acme, name="Shop")
    given = store_file(acme, ContentFile(b"brief"), name="brief.txt", source="upload")
    launched = data_of(
        call(
            url,
            acme_key,
            "launch_run",
            {
                "task": "Read the brief.",
                "profile_id": profile.public_id,
                "save_profile": False,
                "file_ids": [given.public_id],
            },
        )
    )
    run = Run.objects.get(public_id=launched["id"])
    assert run.profile == profile and run.save_profile is False
    downloaded = store_file(acme, ContentFile(b"%PDF"), name="invoice.pdf", source="download", run=run)

    files = data_of(call(url, acme_key, "list_run_files", {"run_id": run.public_id}))["files"]
    assert [(f["id"], f["source"]) for f in files] == [(given.public_id, "upload"), (downloaded.public_id, "download")]
    unknown = call(url, acme_key, "launch_run", {"task": "t", "file_ids": ["file_nope"]})
    assert refusal(unknown).startswith("invalid_request: file_ids:")


def test_a_recipe_is_made_from_a_run_and_replayed_through_mcp(asgi_server, acme, acme_key):
    url = f"{asgi_server}/mcp"
    run = play_contact_run(acme)
    made = data_of(
        call(url, acme_key, "make_recipe", {"run_id": run.public_id, "parameters": {"customer": "Ada Lovelace"}})
    )
    assert made["id"].startswith("rcp_") and made["task"] == "Send the contact form as {{customer}}."
    replayed = data_of(
        call(url, acme_key, "replay_recipe", {"recipe_id": made["id"], "parameters": {"customer": "Grace Hopper"}})
    )
    replay = Replay.objects.get(run__public_id=replayed["id"])
    assert replay.recipe.public_id == made["id"] and replay.parameters == {"customer": "Grace Hopper"}
    assert replayed["task"] == "Send the contact form as Grace Hopper."
    failed = make_run(acme, status=Run.Status.FAILED, success=False)
    assert refusal(call(url, acme_key, "make_recipe", {"run_id": failed.public_id})).startswith("conflict:")


def test_another_workspaces_key_is_refused_every_one_of_them(asgi_server, acme, umbrella_key):
    url = f"{asgi_server}/mcp"
    run = play_contact_run(acme)
    recipe = make_recipe(run)
    for tool, arguments in (
        ("pause_run", {"run_id": run.public_id}),
        ("send_message", {"run_id": run.public_id, "text": "x"}),
        ("answer_input", {"run_id": run.public_id, "text": "x"}),
        ("resume_run", {"run_id": run.public_id}),
        ("list_run_files", {"run_id": run.public_id}),
        ("make_recipe", {"run_id": run.public_id}),
    ):
        assert refusal(call(url, umbrella_key, tool, arguments)).startswith("not_found:"), tool
    # A replay names its recipe as a launch field: another workspace's is refused as unknown, as POST /runs does.
    foreign = refusal(call(url, umbrella_key, "replay_recipe", {"recipe_id": recipe.public_id}))
    assert (
        foreign
        == f"invalid_request: recipe_id: no recipe '{recipe.public_id}' in this workspace (GET /api/v1/recipes lists them)"
    )
    run.refresh_from_db()
    assert run.paused_at is None and not RunMessage.objects.exists() and not Replay.objects.exists()
