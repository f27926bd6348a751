"""The browsers queue's task as the web sends it, by name: the worker's half is runtime.browser_sessions."""

from agent_platform.celery import app

run_session = app.signature("browsers.tasks.run_session", options={"ignore_result": True})
