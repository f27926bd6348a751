"""On first start, create an operator account and a workspace, and say how to sign in."""

import secrets
from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from agent_platform.models import Membership, Workspace


class Command(BaseCommand):
    help = "Create the first operator (a superuser) and a default workspace if there is no user yet."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--username", default="operator")
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args: Any, username: str, url: str, **options: Any) -> None:
        User = get_user_model()
        if User.objects.exists():
            self.stdout.write(f"Sign in at {url} with your operator account.")
            return
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=username, email="", password=password)
        workspace, _ = Workspace.objects.get_or_create(slug="default", defaults={"name": "Default"})
        Membership.objects.create(user=user, workspace=workspace, role=Membership.Role.OWNER)
        self.stdout.write(
            "\nFirst start: an operator account was created.\n"
            f"  Sign in at {url}\n  username: {username}\n  password: {password}\n"
            "Change the password in the admin (/admin/) once signed in; it is not shown again.\n"
        )
