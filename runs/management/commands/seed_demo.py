"""On a key-less first start, launch the bundled demo tasks so the console has real runs to show."""

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from agent_platform.models import Membership, Workspace
from runs.files import StoredFile, store_file
from runs.launch import launch_run
from runs.models import Run
from runs.presets import demo_tasks
from runs.profiles.models import Profile


class Command(BaseCommand):
    help = "Launch the bundled demo tasks in the default workspace, once (nothing happens if it has runs)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--base-url", default=settings.DEMO_BASE_URL, help="the demo site's own server")
        parser.add_argument("--workspace", default="default")

    def handle(self, *args: Any, base_url: str, workspace: str, **options: Any) -> None:
        found = Workspace.objects.filter(slug=workspace).first()
        if found is None or Run.objects.for_workspace(found).exists():
            return
        owner = Membership.objects.filter(workspace=found, role=Membership.Role.OWNER).select_related("user").first()
        for preset in demo_tasks(base_url):
            arguments = {
                key: value for key, value in preset.items() if key not in ("label", "profile", "seed", "sample_file")
            }
            if profile_name := preset.get("profile"):
                # the profile the sign-in preset saves and the account preset then starts from
                profile = Profile.objects.for_workspace(found).filter(name=profile_name).first()
                profile = profile or Profile.objects.create(workspace=found, name=profile_name)
                arguments["profile_id"] = profile.public_id
            if not preset.get("seed", True):
                continue
            if sample := preset.get("sample_file"):
                with open(sample, "rb") as handle:
                    given = store_file(found, handle, name=sample.name, source=StoredFile.Source.UPLOAD)
                arguments["file_ids"] = [given.public_id]
            run = launch_run(found, created_by=owner.user if owner else None, **arguments).run
            self.stdout.write(f"Demo run {run.public_id}: {preset['label']}")
