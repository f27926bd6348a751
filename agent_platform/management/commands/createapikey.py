"""Issue an API key for a workspace; the secret is printed alone on the last line, once."""

from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify

from agent_platform.models import ApiKey, Workspace


class Command(BaseCommand):
    help = "Create an API key for WORKSPACE (its slug or name) and print the secret on the last line of stdout."

    def add_arguments(self, parser):
        parser.add_argument("workspace", help="workspace slug (or name with --create)")
        parser.add_argument("--create", action="store_true", help="create the workspace if it does not exist")
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args, workspace: str, create: bool, name: str, **options):
        slug = slugify(workspace)
        found = Workspace.objects.filter(slug=slug).first()
        if found is None:
            if not create:
                raise CommandError(f"No workspace {workspace!r}; pass --create to create it.")
            found = Workspace.objects.create(name=workspace, slug=slug)
            self.stderr.write(f"Created workspace {found.slug}.")
        key, secret = ApiKey.issue(found, name=name or "createapikey")
        self.stderr.write(f"API key {key.display} for workspace {found.slug}. Store it now: it is not shown again.")
        self.stdout.write(secret)
