"""Issue an API key for a workspace; the secret is printed alone on the last line, once."""

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify

from agent_platform.models import ApiKey, Membership, Workspace


class Command(BaseCommand):
    help = (
        "Create an API key and print the secret on the last line of stdout. Name the workspace (its slug or name), "
        "or give --for USERNAME to use that user's workspace: runs launched with the key appear in the UI of the "
        "workspace's members."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("workspace", nargs="?", default="", help="workspace slug (or name with --create)")
        parser.add_argument(
            "--for",
            dest="for_user",
            default="",
            metavar="USERNAME",
            help="the key is for this user's workspace (with WORKSPACE: add the user to it as an owner)",
        )
        parser.add_argument("--create", action="store_true", help="create the workspace if it does not exist")
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args: Any, workspace: str, for_user: str, create: bool, name: str, **options: Any) -> None:
        user = None
        if for_user:
            user = get_user_model().objects.filter(username=for_user).first()
            if user is None:
                raise CommandError(f"No user {for_user!r}.")
        if workspace:
            found = self.named_workspace(workspace, create)
            if user is not None:
                _, added = Membership.objects.get_or_create(
                    user=user, workspace=found, defaults={"role": Membership.Role.OWNER}
                )
                if added:
                    self.stderr.write(f"Added {user.username} to workspace {found.slug} as an owner.")
        elif user is None:
            raise CommandError("Name a workspace, or give --for USERNAME to use that user's workspace.")
        else:
            membership = Membership.objects.filter(user=user).select_related("workspace").order_by("created_at").first()
            if membership is None:
                raise CommandError(
                    f"{user.username} is in no workspace; name one: createapikey WORKSPACE --create --for "
                    f"{user.username}"
                )
            found = membership.workspace
        key, secret = ApiKey.issue(found, name=name or "createapikey")
        self.stderr.write(self.whose(found))
        self.stderr.write(f"API key {key.display} for workspace {found.slug}. Store it now: it is not shown again.")
        self.stdout.write(secret)

    def named_workspace(self, workspace: str, create: bool) -> Workspace:
        slug = slugify(workspace)
        found = Workspace.objects.filter(slug=slug).first()
        if found is None:
            if not create:
                raise CommandError(f"No workspace {workspace!r}; pass --create to create it.")
            found = Workspace.objects.create(name=workspace, slug=slug)
            self.stderr.write(f"Created workspace {found.slug}.")
        return found

    @staticmethod
    def whose(workspace: Workspace) -> str:
        """Who will see the key's runs in the UI, and how to add someone: a key for a memberless workspace launches
        runs that no signed-in operator can see."""
        members = list(Membership.objects.filter(workspace=workspace).select_related("user"))
        how = (
            "Add a member in the admin (/admin/agent_platform/membership/add/), or issue the key with "
            f"`manage.py createapikey {workspace.slug} --for USERNAME`, which adds that user as an owner."
        )
        if not members:
            return f"Workspace {workspace.slug} has no members: nobody sees its runs in the UI. {how}"
        names = ", ".join(f"{m.user.username} ({m.role})" for m in members)
        return f"Workspace {workspace.slug}'s runs appear in the UI of: {names}. {how}"
