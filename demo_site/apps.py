"""App config for the bundled demo website."""

from django.apps import AppConfig


class DemoSiteConfig(AppConfig):
    name = "demo_site"
    verbose_name = "Demo site"
