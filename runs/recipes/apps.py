"""App config for recipes: a succeeded run's browser steps, retargeted by role and accessible name, that later runs
replay without the model. A part of runs (a replay is a run; the worker's runtime reads it), an app of its own under
the label "recipes"."""

from django.apps import AppConfig


class RecipesConfig(AppConfig):
    name = "runs.recipes"
    label = "recipes"

    def ready(self) -> None:
        from . import receivers  # noqa: F401, PLC0415 (lazy: connects the run listeners once the models are ready)
