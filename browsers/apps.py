"""The browsers app: sessions of a dedicated Chromium that a client drives over CDP through the web tier."""

from django.apps import AppConfig


class BrowsersConfig(AppConfig):
    name = "browsers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the usage page, the usage API and billing read browser minutes through the platform's meters
        from agent_platform import meters  # noqa: PLC0415 (the models are loaded only once the app is ready)

        from .services import BROWSER_MINUTES  # noqa: PLC0415

        meters.register(BROWSER_MINUTES)
