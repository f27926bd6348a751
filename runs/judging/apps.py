"""App config for judgments and outcome evaluations: a part of runs (it reads and writes runs' own records, and runs'
pages, API and admin show its results), kept an app of its own under its first label, "judge", so its tables, its
migrations and its admin URLs stay what they were when it was a top-level app."""

from django.apps import AppConfig


class JudgeConfig(AppConfig):
    name = "runs.judging"
    label = "judge"
