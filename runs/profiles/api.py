"""The profiles API: create, list, read, rename and delete a workspace's profiles, and sign in by hand. A profile's
browser state is never in an answer: only its cookie domains and size."""

from datetime import datetime
from typing import Annotated, Any

from django.db.models import QuerySet
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictStr
from pydantic.json_schema import JsonDict

from agent_platform.api import ERROR_RESPONSES, ApiRequest, ErrorOut, PathId, documented_pattern
from agent_platform.lookup import find
from agent_platform.names import name_pattern
from runs.api import RunPathId
from runs.reading import PAGE_DEFAULT, PAGE_MAX, Cursor, RunOut, find_run, paginate, run_shown

from . import services
from .models import NAME_MAX_CHARS, Profile

router = Router(tags=["profiles"])
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
ProfilePathId = Annotated[str, PathId("profile", "prof")]
NAME_PATTERN = documented_pattern(
    name_pattern(NAME_MAX_CHARS), f"must be 1 to {NAME_MAX_CHARS} characters, without control characters"
)

PROFILE_EXAMPLE: JsonDict = {
    "id": "prof_4k2j9x0c7v1b8n3m5q6w2e7r",
    "name": "Supplier portal (accounts@)",
    "cookie_domains": ["portal.example.com"],
    "size_bytes": 2817,
    "created_at": "2026-12-02T09:14:03.512Z",
    "updated_at": "2026-12-02T09:20:41.006Z",
    "last_used_at": "2026-12-02T09:20:41.006Z",
}


class ProfileIn(Schema):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "Supplier portal (accounts@)"}]})

    name: StrictStr = Field(pattern=NAME_PATTERN, description="A name of your choosing, 1 to 100 characters.")


class ProfileOut(Schema):
    model_config = ConfigDict(json_schema_extra={"examples": [PROFILE_EXAMPLE]})

    id: str
    name: str
    cookie_domains: list[str] = Field(description="The hosts the kept state holds cookies for (never the cookies).")
    size_bytes: int = Field(description="The kept state's size as JSON; 0 before any run wrote it.")
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = Field(description="When a run last started from or wrote the profile.")


class ProfileListOut(Schema):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"profiles": [PROFILE_EXAMPLE], "next_cursor": None, "has_more": False}]}
    )

    profiles: list[ProfileOut]
    next_cursor: str | None
    has_more: bool


class SignInIn(Schema):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"start_url": "https://portal.example.com/login"}]}
    )

    start_url: StrictStr = Field(description="The http(s) page where you sign in; the network policy applies.")


class ProfileFilters(Schema):
    cursor: Cursor | None = Field(None, description="next_cursor of the previous page, as it was given.")
    limit: int = Field(PAGE_DEFAULT, ge=1, le=PAGE_MAX)


def profile_out(profile: Profile) -> dict[str, Any]:
    return {
        "id": profile.public_id,
        "name": profile.name,
        "cookie_domains": profile.cookie_domains,
        "size_bytes": profile.size_bytes,
        "created_at": profile.created_at,
        "updated_at": profile.updated_at,
        "last_used_at": profile.last_used_at,
    }


def profiles_of(request: ApiRequest) -> QuerySet[Profile]:
    return Profile.objects.for_workspace(request.workspace)


@router.post("/profiles", response={201: ProfileOut, **ERROR_RESPONSES}, summary="Create a profile")
def create_profile(request: ApiRequest, payload: ProfileIn) -> Status[dict[str, Any]]:
    return Status(201, profile_out(services.create_profile(request.workspace, payload.name)))


@router.get("/profiles", response={200: ProfileListOut, **ERROR_RESPONSES}, summary="List profiles, newest first")
def list_profiles(request: ApiRequest, filters: Query[ProfileFilters]) -> dict[str, Any]:
    page = paginate(profiles_of(request), filters.cursor, filters.limit)
    return {
        "profiles": [profile_out(profile) for profile in page.rows],
        "next_cursor": page.next_cursor,
        "has_more": page.has_more,
    }


@router.get("/profiles/{profile_id}", response={200: ProfileOut, **ERROR_RESPONSES}, summary="A profile")
def get_profile(request: ApiRequest, profile_id: ProfilePathId) -> dict[str, Any]:
    return profile_out(find(profiles_of(request), profile_id, "profile"))


@router.patch("/profiles/{profile_id}", response={200: ProfileOut, **ERROR_RESPONSES}, summary="Rename a profile")
def update_profile(request: ApiRequest, profile_id: ProfilePathId, payload: ProfileIn) -> dict[str, Any]:
    profile = find(profiles_of(request), profile_id, "profile")
    return profile_out(services.rename_profile(profile, payload.name))


@router.delete(
    "/profiles/{profile_id}",
    response={204: None, **ERROR_RESPONSES},
    summary="Delete a profile",
    description="Deleted at once, with its state, even while runs use it: they keep the browser they started "
    "from and write nothing back when they end.",
)
def delete_profile(request: ApiRequest, profile_id: ProfilePathId) -> Status[None]:
    services.delete_profile(find(profiles_of(request), profile_id, "profile"))
    return Status(204, None)


@router.post(
    "/profiles/{profile_id}/sign_in",
    response={201: RunOut, **ERROR_RESPONSES},
    summary="Sign in by hand",
    description="Starts a run of kind sign_in: a live browser from the profile at start_url, with no agent. Drive "
    "it through the run page's interactive live view, then save it (POST /runs/{id}/save) or cancel it; without "
    "either it ends after RUN_INPUT_TIMEOUT_SECONDS (default 900) with the profile unchanged.",
)
def start_sign_in(request: ApiRequest, profile_id: ProfilePathId, payload: SignInIn) -> Status[dict[str, Any]]:
    profile = find(profiles_of(request), profile_id, "profile")
    run = services.start_sign_in(profile, payload.start_url)
    return Status(201, run_shown(request.workspace, run))


@router.post(
    "/runs/{run_id}/save",
    response={200: RunOut, 409: ErrorOut, **ERROR_RESPONSES},
    summary="Save a sign-in by hand",
    description="Its worker writes the browser's state to the run's profile and ends the run succeeded. Idempotent "
    "while the run runs; 409 for a run of another kind or one that ended.",
)
def save_sign_in(request: ApiRequest, run_id: RunPathId) -> dict[str, Any]:
    run = find_run(request.workspace, run_id)
    services.request_save(run)
    return run_shown(request.workspace, run)
