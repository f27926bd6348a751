"""v4's /profiles on Pilothouse's profiles (runs.profiles): create, list, read, update and delete, and a run's
browserSettings.profileId as the launch's profile. A profile's state is never in an answer, only its cookie domains."""

import uuid
from typing import Any

from django.db.models import QuerySet
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictStr

from agent_platform.api import ApiRequest
from agent_platform.errors import InvalidRequest
from runs.profiles import services
from runs.profiles.models import Profile

from .api import ERRORS
from .launching import find_profile

router = Router(tags=["profiles"])

PAGE_SIZE_DEFAULT = 20
PAGE_SIZE_MAX = 100
# Browser Use's profile may be nameless; a Pilothouse profile has a name its pages show.
UNNAMED = "Untitled profile"


class ProfileCreateIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: StrictStr | None = None
    userId: StrictStr | None = None


class ProfileView(Schema):
    id: uuid.UUID
    userId: str | None
    name: str | None
    lastUsedAt: Any
    createdAt: Any
    updatedAt: Any
    cookieDomains: list[str] | None


class ProfileListOut(Schema):
    items: list[ProfileView]
    totalItems: int
    pageNumber: int
    pageSize: int


class ProfileFilters(Schema):
    query: str | None = Field(None, max_length=100)
    pageSize: int = Field(PAGE_SIZE_DEFAULT, ge=1, le=PAGE_SIZE_MAX)
    pageNumber: int = Field(1, ge=1)


def profile_view(profile: Profile) -> dict[str, Any]:
    return {
        "id": profile.uuid,
        "userId": profile.user_id or None,
        "name": profile.name,
        "lastUsedAt": profile.last_used_at,
        "createdAt": profile.created_at,
        "updatedAt": profile.updated_at,
        "cookieDomains": profile.cookie_domains,
    }


def renamed(error: InvalidRequest, v1: str, v4: str) -> InvalidRequest:
    """A profile service's refusal naming the field as the v4 caller wrote it."""
    if error.field != v1:
        return error
    return InvalidRequest(v4 + error.message[len(v1) :], field=v4, detail=error.detail)


@router.post("/profiles", response={201: ProfileView, **ERRORS}, summary="Create a profile")
def create_profile(request: ApiRequest, body: ProfileCreateIn) -> Status[dict[str, Any]]:
    try:
        profile = services.create_profile(request.workspace, body.name or UNNAMED, body.userId)
    except InvalidRequest as error:
        raise renamed(error, "user_id", "userId") from None
    return Status(201, profile_view(profile))


@router.get("/profiles", response={200: ProfileListOut, **ERRORS}, summary="List profiles, newest first")
def list_profiles(request: ApiRequest, filters: Query[ProfileFilters]) -> dict[str, Any]:
    profiles: QuerySet[Profile] = Profile.objects.for_workspace(request.workspace)
    if filters.query:
        profiles = profiles.filter(name__icontains=filters.query)
    start = (filters.pageNumber - 1) * filters.pageSize
    return {
        "items": [profile_view(profile) for profile in profiles[start : start + filters.pageSize]],
        "totalItems": profiles.count(),
        "pageNumber": filters.pageNumber,
        "pageSize": filters.pageSize,
    }


@router.get("/profiles/{profile_id}", response={200: ProfileView, **ERRORS}, summary="A profile")
def get_profile(request: ApiRequest, profile_id: str) -> dict[str, Any]:
    return profile_view(find_profile(request.workspace, profile_id))


@router.patch("/profiles/{profile_id}", response={200: ProfileView, **ERRORS}, summary="Rename a profile")
def update_profile(request: ApiRequest, profile_id: str, body: ProfileCreateIn) -> dict[str, Any]:
    """`name` renames it (null gives it the default name back); `userId` sets or (null) clears the caller's id."""
    profile = find_profile(request.workspace, profile_id)
    try:
        if "name" in body.model_fields_set:
            services.rename_profile(profile, body.name or UNNAMED)
        if "userId" in body.model_fields_set:
            services.set_user_id(profile, body.userId)
    except InvalidRequest as error:
        raise renamed(error, "user_id", "userId") from None
    return profile_view(profile)


@router.delete("/profiles/{profile_id}", response={204: None, **ERRORS}, summary="Delete a profile")
def delete_profile(request: ApiRequest, profile_id: str) -> Status[None]:
    services.delete_profile(find_profile(request.workspace, profile_id))
    return Status(204, None)
