"""The v4 API with every part's router on it: runs and sessions (api), profiles, workspaces and files, and a
session's queue, share link and purge."""

from . import files, profiles, sessions_extra
from .api import api

api.add_router("", profiles.router)
api.add_router("", files.router)
api.add_router("", sessions_extra.router)

__all__ = ["api"]
