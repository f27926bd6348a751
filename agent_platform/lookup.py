"""Finding a workspace's row by the id a door was given: one rule for every door, one not_found answer."""

import re
from typing import TypeVar

from django.db.models import Model, QuerySet

from .errors import NotFound

Found = TypeVar("Found", bound=Model)

# The shape of every public id (`ids.new_public_id`: run_…, sess_…, whe_…).
PUBLIC_ID = re.compile(r"^[a-z]{2,8}_[0-9a-z]{1,40}$")
# A UUID, with or without its hyphens: the id the v4 API gives runs and sessions.
UUID_ID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


def find(queryset: QuerySet[Found], public_id: str, what: str) -> Found:
    """The row of `queryset` (already scoped to the caller's workspace) with this public id, or with this UUID where
    its model has one (the v4 API's ids); any other id (malformed, unknown, another workspace's) is not_found."""
    found = None
    if PUBLIC_ID.match(public_id):
        found = queryset.filter(public_id=public_id).first()
    elif UUID_ID.match(public_id) and any(field.name == "uuid" for field in queryset.model._meta.get_fields()):
        found = queryset.filter(uuid=public_id).first()
    if found is None:
        raise NotFound(f"No {what} '{public_id[:60]}' in this workspace.")
    return found
