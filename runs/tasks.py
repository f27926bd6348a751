"""The runs queue's tasks as the web sends them: by name, to the workers that run them (runtime.tasks). The web never
imports the runtime; a signature sends exactly the message the task itself would (its name, arguments and options)."""

from agent_platform.celery import app

execute_run = app.signature("runtime.tasks.execute_run", options={"ignore_result": True})
reap_stale_runs = app.signature("runtime.tasks.reap_stale_runs", options={"ignore_result": True})
