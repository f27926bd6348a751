"""Write the billing view's daily rollup again from the model requests."""

from typing import Any

from django.core.management.base import BaseCommand

from agent_platform.reports import rebuild_usage_days


class Command(BaseCommand):
    help = (
        "Rebuild the daily usage rollup (UsageDay) from every model request: after TIME_ZONE changed (days are "
        "TIME_ZONE's), or after requests were written around the ORM (raw SQL, COPY)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        written = rebuild_usage_days()
        self.stdout.write(f"Rebuilt the usage rollup: {written} day rows.")
