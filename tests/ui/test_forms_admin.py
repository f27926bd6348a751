"""What a new operator tripped on in the forms, the admin and the API docs: a lint that names every problem at once,
a webhook refusal that says how to allow a local receiver, no test model in the picker, the admin's prices told apart
and written in 24-hour time like the app, and the API docs served from vendored files."""

import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.staticfiles import finders

from agent_platform import llm
from agent_platform.models import Price
from runs.schema import schema_problems
from tests.support.clients import client_for

pytestmark = pytest.mark.django_db

TWO_PROBLEMS = {
    "type": "object",
    "properties": {"email": {"type": "string", "format": "email"}, "count": {"type": "integr"}},
}


def test_the_schema_lint_names_every_problem_at_once():
    problems = schema_problems(TWO_PROBLEMS)
    assert [(problem.path, problem.keyword) for problem in problems] == [
        ("$.properties.email.format", "format"),
        ("$.properties.count.type", "type"),
    ]
    assert "integr" in problems[1].message


def test_the_forms_lint_endpoint_shows_both_problems(alice_client):
    answer = alice_client.post("/runs/schema-lint/", json.dumps(TWO_PROBLEMS), content_type="text/plain").json()
    assert answer["ok"] is False and len(answer["problems"]) == 2


def test_a_refused_local_webhook_says_which_setting_entry_allows_it(alice_client, settings):
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1:8001"]
    page = alice_client.post(
        "/settings/webhooks/endpoints/", {"url": "http://127.0.0.1:9999/hook", "events": ["run.judged"]}
    )
    text = page.content.decode()
    assert page.status_code == 400
    assert "127.0.0.1 is allowed on other ports only" in text
    assert "add 127.0.0.1:9999 to the BROWSER_ALLOWED_PRIVATE_HOSTS setting" in text


def test_a_refused_cloud_metadata_webhook_gets_no_hint(alice_client):
    page = alice_client.post(
        "/settings/webhooks/endpoints/", {"url": "http://169.254.169.254/x", "events": ["run.judged"]}
    )
    assert page.status_code == 400 and "BROWSER_ALLOWED_PRIVATE_HOSTS" not in page.content.decode()


def test_the_test_model_never_reaches_the_launch_forms_picker(alice_client, messages_stub):
    llm.forget_profiles()
    page = alice_client.get("/runs/new/").content.decode()
    assert 'value="claude-sonnet-5-5"' in page
    assert "claude-test-200k" not in page and "Claude Test 200K" not in page
    assert llm.profile("claude-test-200k").id == "claude-test-200k"  # still answered by id, as tests need
    llm.forget_profiles()


@pytest.fixture
def price_admin(db):
    user = get_user_model().objects.create_user(username="olga", password="olga-password-123", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=["view_price", "view_run"]))
    return client_for(user)


def test_the_two_haiku_tiers_are_told_apart_in_the_prices_changelist_in_24_hour_time(price_admin):
    Price.objects.all().delete()
    start = datetime(2026, 10, 1, 18, 30, tzinfo=UTC)
    for threshold, price in ((0, "1.00"), (200_000, "2.00")):
        Price.objects.create(
            model="claude-haiku-5-5", valid_from=start, min_prompt_tokens=threshold,
            input_per_mtok=Decimal(price), output_per_mtok=Decimal("5"), cache_write_5m_per_mtok=Decimal("1.25"),
            cache_write_1h_per_mtok=Decimal("2"), cache_read_per_mtok=Decimal("0.1"),
        )  # fmt: skip
    page = price_admin.get("/admin/agent_platform/price/").content.decode()
    assert "column-valid_from" in page and "column-min_prompt_tokens" in page
    assert "200000" in page or "200,000" in page
    assert "2026-10-01 18:30" in page and "p.m." not in page
    assert "$1.25 · $2.00 · $0.10" in page


def test_the_api_docs_load_only_local_files_and_those_are_served(client):
    page = client.get("/api/v1/docs").content.decode()
    urls = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert urls and all(url.startswith("/") and not url.startswith("//") for url in urls), urls
    assert "/static/vendor/swagger-ui-5.35.0/swagger-ui-bundle.js" in urls
    assert "/static/vendor/swagger-ui-5.35.0/swagger-ui.css" in urls
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"):
        assert finders.find(f"vendor/swagger-ui-5.35.0/{name}"), name
    assert "SwaggerUIBundle" in Path(finders.find("vendor/swagger-ui-5.35.0/swagger-ui-bundle.js")).read_text()
