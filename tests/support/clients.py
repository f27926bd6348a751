"""Signed-in operators and API clients."""

import json

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from agent_platform.models import Membership, Workspace


def make_user(username: str, workspace: Workspace | None, role: str = Membership.Role.MEMBER):
    user = get_user_model().objects.create_user(username=username, password=f"{username}-password-123")
    if workspace is not None:
        Membership.objects.create(user=user, workspace=workspace, role=role)
    return user


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


class ApiClient:
    """Django's test client with a bearer key and JSON bodies."""

    def __init__(self, key: str | None):
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}

    def _call(self, method: str, path: str, body=None, headers: dict | None = None, raw: str | None = None):
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs = {"headers": {**self.headers, **(headers or {})}}
        if data is not None:
            kwargs["data"] = data
            kwargs["content_type"] = "application/json"
        return getattr(self.client, method)(f"/api/v1{path}", **kwargs)

    def get(self, path: str, **kwargs):
        return self._call("get", path, **kwargs)

    def post(self, path: str, body=None, **kwargs):
        return self._call("post", path, body, **kwargs)

    def post_file(self, path: str, name: str, data: bytes, content_type: str = "application/octet-stream"):
        """A multipart upload, one part named `file` (POST /api/v1/files)."""
        upload = SimpleUploadedFile(name, data, content_type=content_type)
        return self.client.post(f"/api/v1{path}", {"file": upload}, headers=self.headers)

    def patch(self, path: str, body=None, **kwargs):
        return self._call("patch", path, body, **kwargs)

    def delete(self, path: str, **kwargs):
        return self._call("delete", path, **kwargs)
