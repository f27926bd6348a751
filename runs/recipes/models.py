"""A recipe, its versions (steps and parameters), and the replay a run is when it was launched from one."""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.utils.timezone import now

from agent_platform.ids import new_public_id
from agent_platform.models import Workspace
from runs.models import Run


def recipe_id() -> str:
    return new_public_id("rcp")


class RecipeQuerySet(models.QuerySet["Recipe"]):
    def for_workspace(self, workspace: Workspace) -> "RecipeQuerySet":
        return self.filter(workspace=workspace)


class Recipe(models.Model):
    """What a replay repeats: the task, where it starts, the schema of its data, and its versions' steps."""

    public_id = models.CharField(max_length=40, unique=True, default=recipe_id, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="recipes")
    name = models.CharField(max_length=200)
    # The source run's task, its parameters' values written {{name}}: a replay's task is it with its parameters
    task = models.TextField()
    start_url = models.URLField(max_length=2000, blank=True)
    output_schema = models.JSONField(null=True, blank=True)
    source_run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="recipes_made")
    # A healed run's proposal becomes the current version at once, without an operator accepting it.
    auto_accept = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=now)

    objects = RecipeQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.public_id

    def current(self) -> "RecipeVersion":
        """The accepted version with the highest number: what a replay runs."""
        return self.versions.filter(status=RecipeVersion.Status.ACCEPTED).order_by("-number")[0]


class RecipeVersion(models.Model):
    class Status(models.TextChoices):
        ACCEPTED = "accepted"
        PROPOSED = "proposed"  # made by a healed run; replays keep the accepted one until an operator accepts it
        DECLINED = "declined"

    recipe = models.ForeignKey(Recipe, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACCEPTED)
    # [{action, target: {role, name, nth, frame} | null, value, url, fingerprint}] (runs.recipes.steps)
    steps = models.JSONField(default=list)
    # [{name, default}]: each {{name}} in the steps and the task
    parameters = models.JSONField(default=list)
    # The run whose steps these are: the recipe's source run, or the healed replay that proposed this version.
    source_run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # What the source run cost: a replay's saving is counted against it.
    source_cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=Decimal(0))
    # The source run's verdict {output, data} and a hash of its last page's text: a replay that ends on the same text
    # takes this data without an extraction request.
    last_done = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ["recipe", "-number"]
        constraints = [models.UniqueConstraint(fields=["recipe", "number"], name="recipe_version_number_once")]

    def __str__(self) -> str:
        return f"{self.recipe} v{self.number}"


class Replay(models.Model):
    """A run launched from a recipe: the version and parameters it replays, and how far it got without the model."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="replay")
    recipe = models.ForeignKey(Recipe, on_delete=models.CASCADE, related_name="replays")
    version = models.ForeignKey(RecipeVersion, on_delete=models.CASCADE, related_name="replays")
    parameters = models.JSONField(default=dict)
    replayed_steps = models.PositiveIntegerField(default=0)
    # The step (1-based) where the model took over; null while every step replayed.
    healed_from_step = models.PositiveIntegerField(null=True, blank=True)
    why_healed = models.CharField(max_length=500, blank=True)
    # The source run's cost less this run's, once it ended (negative when healing cost more).
    cost_saved_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    proposed_version = models.ForeignKey(
        RecipeVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposed_by"
    )

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.run} of {self.version}"
