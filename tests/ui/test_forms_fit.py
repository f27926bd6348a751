"""Forms that fit, in real Chromium against Daphne: every field of the launch form (the proxy and profile rows, the
judge's statements and the rubric opened) lies where a click reaches it at 1,280, 1,440, 1,920 and 390 px; a run is
launched with a cost cap and a proxy chosen from the form at 1,440 px; and a recipe's "Replay now" sends the
parameters as they are in its fields, edited and not saved."""

import os
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from agent_platform.models import Membership
from runs.models import Run
from runs.profiles.models import Profile
from runs.proxies import create_proxy
from runs.recipes import services
from runs.recipes.models import Replay
from tests import messages_stub as stub_fixtures
from tests.support import live
from tests.support.launching import wait_for
from tests.support.layout import COVERED
from tests.support.live import signed_in_page
from tests.support.recipes import play_contact_run

asgi_server = live.asgi_server
chromium = live.chromium
messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def operator(acme, settings):
    settings.PROXY_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    user = get_user_model().objects.create_user(username="olga")
    Membership.objects.create(user=user, workspace=acme, role=Membership.Role.OWNER)
    return user


def open_launch_form(chromium, asgi_server, operator, acme, width):
    create_proxy(acme, name="Residential, Frankfurt, rotating", url="socks5://127.0.0.1:1080")
    Profile.objects.create(workspace=acme, name="Shop account", cookie_domains=["shop.example.com"])
    page = signed_in_page(chromium, asgi_server, operator)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{asgi_server}/runs/new/")
    page.evaluate("document.fonts.ready")
    return page


@pytest.mark.parametrize("width", [1280, 1440, 1920, 390])
def test_every_field_of_the_launch_form_is_clickable(
    width, messages_stub_server, asgi_server, chromium, operator, acme
):
    page = open_launch_form(chromium, asgi_server, operator, acme, width)
    page.locator("#id_judge").check()
    page.locator("#id_outcome_enabled").check()

    covered = page.evaluate(COVERED)
    page.context.close()

    assert covered == [], f"the launch form at {width}px:\n" + "\n".join(covered)


def test_a_run_is_launched_with_a_cost_cap_and_a_proxy_chosen_from_the_form(
    messages_stub_server, asgi_server, chromium, operator, acme
):
    page = open_launch_form(chromium, asgi_server, operator, acme, 1440)
    proxy = acme.proxies.get()
    page.locator("#id_task").fill("Open the shop and read the price of the cedar planter.")
    # Real clicks: Playwright refuses to click a control another element lies over.
    page.locator("#id_max_cost_usd").click()
    page.keyboard.type("0.25")
    page.locator("#id_proxy_id").click()
    page.locator("#id_proxy_id").select_option(proxy.public_id)
    page.locator("#launch-submit").click()
    page.wait_for_url("**/runs/run_*/")
    page.context.close()

    run = Run.objects.get()
    assert run.max_cost_usd == Decimal("0.25")
    assert run.session.proxy == proxy


def test_replay_now_sends_the_parameters_as_they_are_in_the_fields(
    messages_stub_server, asgi_server, chromium, operator, acme
):
    recipe = services.make_recipe(play_contact_run(acme), parameters={"customer": "Ada Lovelace"})
    page = signed_in_page(chromium, asgi_server, operator)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{asgi_server}/recipes/{recipe.public_id}/")
    page.locator("#param-customer").fill("Grace Hopper")
    page.locator("#recipe-replay").click()
    page.wait_for_url("**/runs/run_*/")
    page.context.close()

    replay = wait_for(lambda: Replay.objects.select_related("run").first(), message="the replay to be launched")
    assert replay.parameters == {"customer": "Grace Hopper"}
    assert "Grace Hopper" in replay.run.task
    recipe.refresh_from_db()
    assert recipe.current().parameters == [{"name": "customer", "default": "Ada Lovelace"}]  # nothing was saved
