"""The profiles API: create, list in cursor pages, read, rename and delete; another workspace's profile is not found;
bad input is refused naming its field; a launch takes profile_id and save_profile by the rules; the state never shows."""

import pytest

from runs.models import Run
from runs.profiles.models import Profile
from tests.support.factories import make_run, make_session

PROFILE_FIELDS = {"id", "name", "cookie_domains", "size_bytes", "created_at", "updated_at", "last_used_at"}
STATE = {"cookies": [{"name": "sid", "value": "cookie-value-9f3c", "domain": ".shop.test", "path": "/"}], "origins": []}


def error_of(response, status: int, type: str = "invalid_request") -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["type"] == type
    return error


def create(api, name: str = "Supplier portal") -> dict:
    response = api.post("/profiles", {"name": name})
    assert response.status_code == 201, response.content
    return response.json()


def test_create_returns_201_with_an_empty_profile(api, acme):
    profile = create(api, "  Supplier portal  ")
    assert set(profile) == PROFILE_FIELDS
    assert profile["id"].startswith("prof_")
    assert profile["name"] == "Supplier portal"
    assert profile["cookie_domains"] == [] and profile["size_bytes"] == 0 and profile["last_used_at"] is None
    assert Profile.objects.get(public_id=profile["id"]).workspace == acme


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": 7}, "name"),
        ({"name": "tab\there"}, "name"),
        ({"name": "ok", "state": {}}, "state"),
    ],
)
def test_a_bad_body_is_refused_naming_its_field(api, body, field):
    error = error_of(api.post("/profiles", body), 400)
    assert field in error["message"]
    assert not Profile.objects.exists()


def test_list_pages_newest_first_with_a_cursor(api):
    ids = [create(api, f"Profile {n}")["id"] for n in range(5)]
    first = api.get("/profiles?limit=2").json()
    assert [p["id"] for p in first["profiles"]] == ids[::-1][:2]
    assert first["has_more"] is True
    second = api.get(f"/profiles?limit=2&cursor={first['next_cursor']}").json()
    third = api.get(f"/profiles?limit=2&cursor={second['next_cursor']}").json()
    assert [p["id"] for p in second["profiles"] + third["profiles"]] == ids[::-1][2:]
    assert third["has_more"] is False and third["next_cursor"] is None
    error_of(api.get("/profiles?cursor=nonsense"), 400)


def test_get_patch_and_delete(api):
    profile = create(api)
    assert api.get(f"/profiles/{profile['id']}").json() == profile

    renamed = api.patch(f"/profiles/{profile['id']}", {"name": "Renamed"})
    assert renamed.status_code == 200, renamed.content
    assert renamed.json()["name"] == "Renamed"
    assert renamed.json()["updated_at"] >= profile["updated_at"]
    error_of(api.patch(f"/profiles/{profile['id']}", {"name": ""}), 400)

    assert api.delete(f"/profiles/{profile['id']}").status_code == 204
    error_of(api.get(f"/profiles/{profile['id']}"), 404, "not_found")
    error_of(api.delete(f"/profiles/{profile['id']}"), 404, "not_found")


def test_another_workspaces_profile_is_not_found(api, umbrella_api):
    theirs = create(umbrella_api, "Theirs")
    for response in (
        api.get(f"/profiles/{theirs['id']}"),
        api.patch(f"/profiles/{theirs['id']}", {"name": "Mine now"}),
        api.delete(f"/profiles/{theirs['id']}"),
        api.post(f"/profiles/{theirs['id']}/sign_in", {"start_url": "https://shop.test/login"}),
    ):
        error_of(response, 404, "not_found")
    assert api.get("/profiles").json()["profiles"] == []
    assert Profile.objects.get(public_id=theirs["id"]).name == "Theirs"


def test_the_state_is_never_in_an_answer(api, acme):
    profile = create(api)
    Profile.objects.filter(public_id=profile["id"]).update(**Profile.sealed_fields(STATE))
    shown = api.get(f"/profiles/{profile['id']}").json()
    assert shown["cookie_domains"] == ["shop.test"] and shown["size_bytes"] > 0
    for response in (api.get(f"/profiles/{profile['id']}"), api.get("/profiles")):
        assert "cookie-value-9f3c" not in response.content.decode()
    assert "cookie-value-9f3c" not in Profile.objects.get(public_id=profile["id"]).sealed_state


# --- the launch ------------------------------------------------------------------------------------------------------


def launch(api, **body):
    body.setdefault("task", "Check the order.")
    return api.post("/runs", body)


def test_a_launch_with_a_profile_names_it_and_saves_by_default(api):
    profile = create(api)
    run = launch(api, profile_id=profile["id"])
    assert run.status_code == 201, run.content
    assert run.json()["profile_id"] == profile["id"]
    assert run.json()["save_profile"] is True and run.json()["kind"] == "agent"
    kept = launch(api, profile_id=profile["id"], save_profile=False).json()
    assert kept["save_profile"] is False
    assert launch(api).json()["profile_id"] is None


@pytest.mark.parametrize("profile_id", ["prof_doesnotexist", "not-an-id", "", "x" * 500])
def test_an_unknown_profile_is_refused_naming_profile_id(api, profile_id):
    if profile_id == "":
        assert launch(api, profile_id=profile_id).status_code == 201  # empty means none
        return
    error = error_of(launch(api, profile_id=profile_id), 400)
    assert error["message"].startswith("profile_id")
    assert len(error["message"]) < 300


def test_another_workspaces_profile_is_refused_naming_profile_id(api, umbrella_api):
    theirs = create(umbrella_api, "Theirs")
    error = error_of(launch(api, profile_id=theirs["id"]), 400)
    assert error["message"].startswith("profile_id") and "no profile" in error["message"]


def test_a_follow_up_cannot_name_a_profile(api, acme):
    profile = create(api)
    first = launch(api, profile_id=profile["id"]).json()
    error = error_of(launch(api, session_id=first["session_id"], profile_id=profile["id"]), 400)
    assert error["message"].startswith("profile_id") and "follow-up" in error["message"]
    assert launch(api, session_id=first["session_id"]).status_code == 201


@pytest.mark.parametrize("save_profile", ["yes", 1, None])
def test_save_profile_must_be_a_boolean(api, save_profile):
    response = launch(api, save_profile=save_profile)
    if save_profile is None:
        assert response.status_code == 201
        return
    error = error_of(response, 400)
    assert "save_profile" in error["message"]


def test_deleting_a_profile_keeps_its_runs_without_the_link(api, acme):
    profile = create(api)
    run_id = launch(api, profile_id=profile["id"]).json()["id"]
    assert api.delete(f"/profiles/{profile['id']}").status_code == 204
    assert api.get(f"/runs/{run_id}").json()["profile_id"] is None


# --- sign in by hand -------------------------------------------------------------------------------------------------


def test_sign_in_by_hand_starts_a_sign_in_run(api, acme):
    profile = create(api)
    started = api.post(f"/profiles/{profile['id']}/sign_in", {"start_url": "https://shop.test/login"})
    assert started.status_code == 201, started.content
    run = started.json()
    assert run["kind"] == "sign_in" and run["profile_id"] == profile["id"] and run["status"] == "queued"
    assert run["start_url"] == "https://shop.test/login" and run["usage"]["requests"] == 0
    row = Run.objects.get(public_id=run["id"])
    assert not row.accepts_control, "only while it runs"
    Run.objects.filter(pk=row.pk).update(status=Run.Status.RUNNING)
    row.refresh_from_db()
    assert row.accepts_control


@pytest.mark.parametrize("body", [{}, {"start_url": ""}, {"start_url": "javascript:alert(1)"}, {"start_url": 5}])
def test_sign_in_needs_an_http_start_url(api, body):
    profile = create(api)
    error = error_of(api.post(f"/profiles/{profile['id']}/sign_in", body), 400)
    assert "start_url" in error["message"]


def test_only_a_running_sign_in_can_be_saved(api, acme, umbrella_api):
    agent_run = make_run(acme, session=make_session(acme))
    error_of(api.post(f"/runs/{agent_run.public_id}/save"), 409, "conflict")
    assert not Run.objects.get(pk=agent_run.pk).save_requested_at

    profile = create(api)
    run_id = api.post(f"/profiles/{profile['id']}/sign_in", {"start_url": "https://shop.test/login"}).json()["id"]
    error_of(umbrella_api.post(f"/runs/{run_id}/save"), 404, "not_found")
    # Queued: no browser has been shown yet, so there is nothing of the operator's to save.
    error_of(api.post(f"/runs/{run_id}/save"), 409, "conflict")
    Run.objects.filter(public_id=run_id).update(status=Run.Status.RUNNING)
    assert api.post(f"/runs/{run_id}/save").status_code == 200
    assert api.post(f"/runs/{run_id}/save").status_code == 200  # idempotent
    assert Run.objects.get(public_id=run_id).events.filter(type="sign_in.save_requested").count() == 1
    Run.objects.filter(public_id=run_id).update(status=Run.Status.CANCELLED)  # ended
    error_of(api.post(f"/runs/{run_id}/save"), 409, "conflict")


def test_the_openapi_document_has_the_profile_endpoints_with_examples(api, client):
    schema = client.get("/api/v1/openapi.json").json()
    for path in ("/api/v1/profiles", "/api/v1/profiles/{profile_id}", "/api/v1/profiles/{profile_id}/sign_in"):
        assert path in schema["paths"]
    components = schema["components"]["schemas"]
    assert components["ProfileOut"]["examples"][0]["id"].startswith("prof_")
    assert components["ProfileIn"]["examples"] == [{"name": "Supplier portal (accounts@)"}]
    assert "profile_id" in components["RunIn"]["properties"]
