"""What a v4 launch names beside v1's fields, as the launch's own: workspaceId and attachedFileIds as its file_ids,
browserSettings.profileId as its profile (a Browser Use profile persists, so the run writes its state back)."""

import uuid
from typing import Any

from agent_platform.errors import InvalidRequest, NotFound
from agent_platform.models import Workspace
from runs.files import StoredFile
from runs.profiles.models import Profile

from . import mapping


def find_profile(workspace: Workspace, value: str, field: str | None = None) -> Profile:
    """The workspace's profile by its v4 id (a UUID) or v1 id (prof_…); another workspace's is as unknown."""
    profiles = Profile.objects.for_workspace(workspace)
    try:
        found = profiles.filter(uuid=uuid.UUID(value)).first()
    except ValueError:
        found = profiles.filter(public_id=value).first()
    if found is None:
        message = f"Profile {value[:60]} not found"
        if field is not None:
            raise InvalidRequest.of_field(field, f"no profile {value[:60]!r} in this workspace")
        raise NotFound(message)
    return found


def launch_profile(workspace: Workspace, profile_id: str | None) -> dict[str, Any]:
    """browserSettings.profileId as the launch's profile: the run starts from it and writes its state back when it
    ends, as a Browser Use profile persists (launch rules: docs/profiles.md)."""
    if profile_id is None:
        return {}
    profile = find_profile(workspace, profile_id, field="browserSettings.profileId")
    return {"profile_id": profile.public_id, "save_profile": True}


def launch_files(workspace: Workspace, workspace_id: str | None, attached: list[str] | None) -> dict[str, Any]:
    """A launch's workspaceId and attachedFileIds as its file_ids: the workspace must be the key's own, and each id an
    uploaded file of it (one whose bytes arrived); anything else is refused naming attachedFileIds."""
    if workspace_id is not None:
        try:
            same = uuid.UUID(workspace_id) == mapping.workspace_uuid(workspace)
        except ValueError:
            same = False
        if not same:
            raise InvalidRequest.of_field("workspaceId", "is not this API key's workspace (POST /workspaces says it)")
    if not attached:
        return {}
    wanted: list[uuid.UUID] = []
    for index, value in enumerate(attached):
        try:
            wanted.append(uuid.UUID(value))
        except ValueError:
            raise InvalidRequest.of_field(f"attachedFileIds[{index}]", "is not a file id (a UUID)") from None
    found = dict(StoredFile.objects.for_workspace(workspace).filter(uuid__in=wanted).values_list("uuid", "public_id"))
    missing = [str(value) for value in wanted if value not in found]
    if missing:
        raise InvalidRequest.of_field(
            "attachedFileIds",
            f"no uploaded file {missing[0]} in this workspace (upload its bytes to the upload URL first)",
            detail={"unknown": missing[:20]},
        )
    return {"file_ids": [found[value] for value in wanted]}
