"""The bundled demo shop: landing, paginated product list, product pages, and the contact form that echoes back."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from demo_site.views import PRODUCTS, PRODUCTS_PER_PAGE

# The demo site's own server (DEMO_PORT): the platform's origin no longer serves it.
pytestmark = pytest.mark.urls("demo_site.server_urls")

VALID_CONTACT = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "topic": "returns",
    "message": "Where do I send the notebook back?",
    "subscribe": "on",
}


def products_on(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<a href="/demo/shop/[\w-]+/">([^<]+)</a>\s*<span class="price">\$([\d.]+)</span>', html)


def test_landing_links_to_the_shop_and_the_contact_form(client: Client):
    response = client.get("/demo/")

    assert response.status_code == 200
    assert 'href="/demo/shop/"' in response.text
    assert 'href="/demo/contact/"' in response.text


def test_the_shop_has_twelve_products_in_pages_of_four():
    assert len(PRODUCTS) == 12
    assert PRODUCTS_PER_PAGE == 4
    assert len({product.slug for product in PRODUCTS}) == 12


def test_first_page_lists_the_first_four_products_with_prices(client: Client):
    response = client.get(reverse("demo_site:shop"))

    assert response.status_code == 200
    assert products_on(response.text) == [(product.name, str(product.price)) for product in PRODUCTS[:4]]
    assert 'href="?page=2"' in response.text
    assert "Previous" not in response.text


def test_last_page_lists_the_last_four_and_links_back(client: Client):
    response = client.get("/demo/shop/?page=3")

    assert products_on(response.text) == [(product.name, str(product.price)) for product in PRODUCTS[8:]]
    assert 'href="?page=2" rel="prev"' in response.text
    assert "Next" not in response.text


@pytest.mark.parametrize("page", ["0", "99", "abc"])
def test_an_out_of_range_page_shows_a_real_page(client: Client, page: str):
    response = client.get(f"/demo/shop/?page={page}")

    assert response.status_code == 200
    assert len(products_on(response.text)) == 4


def test_product_page_shows_name_price_and_description(client: Client):
    product = PRODUCTS[2]

    response = client.get(reverse("demo_site:product", args=[product.slug]))

    assert response.status_code == 200
    assert f"<h1>{product.name}</h1>" in response.text
    assert f"${product.price}" in response.text
    assert product.description in response.text


def test_unknown_product_is_not_found(client: Client):
    assert client.get("/demo/shop/no-such-thing/").status_code == 404


def test_contact_form_has_labelled_fields_and_a_send_button(client: Client):
    response = client.get(reverse("demo_site:contact"))

    assert response.status_code == 200
    for field, label in [("name", "Your name"), ("email", "Email address"), ("topic", "Topic"), ("message", "Message")]:
        assert f'<label for="id_{field}">{label}</label>' in response.text
    assert 'type="checkbox" name="subscribe"' in response.text
    assert '<option value="returns">Returns and refunds</option>' in response.text
    assert 'action="/demo/contact/thanks/"' in response.text
    assert "csrfmiddlewaretoken" in response.text


def test_sending_the_contact_form_echoes_every_field():
    # A real browser sends the CSRF cookie and token; enforce the check as it does.
    client = Client(enforce_csrf_checks=True)
    token = client.get("/demo/contact/").cookies["csrftoken"].value

    response = client.post("/demo/contact/thanks/", {**VALID_CONTACT, "csrfmiddlewaretoken": token})

    assert response.status_code == 200
    assert "Thank you, Ada Lovelace!" in response.text
    assert "ada@example.com" in response.text
    assert "Returns and refunds" in response.text
    assert "Where do I send the notebook back?" in response.text
    assert "Subscribed" in response.text


def test_contact_form_without_the_csrf_token_is_refused():
    response = Client(enforce_csrf_checks=True).post("/demo/contact/thanks/", VALID_CONTACT)

    assert response.status_code == 403


def test_an_invalid_contact_form_is_shown_again_with_errors(client: Client):
    response = client.post("/demo/contact/thanks/", {**VALID_CONTACT, "email": "not-an-email", "message": ""})

    assert response.status_code == 400
    assert "Enter a valid email address." in response.text
    assert "This field is required." in response.text
    assert 'value="Ada Lovelace"' in response.text


def test_unchecked_newsletter_box_is_echoed_as_not_subscribed(client: Client):
    data = {key: value for key, value in VALID_CONTACT.items() if key != "subscribe"}

    response = client.post("/demo/contact/thanks/", data)

    assert "Not subscribed" in response.text


def test_thanks_page_without_a_form_sends_you_to_the_form(client: Client):
    response = client.get("/demo/contact/thanks/")

    assert response.status_code == 302
    assert response["Location"] == "/demo/contact/"


def test_the_demo_server_serves_the_demo_and_nothing_of_the_platform():
    from demo_site.server import wsgi_application

    handler = wsgi_application()
    environ = Client().get("/").wsgi_request.environ  # a complete WSGI environ to vary
    statuses = {}
    for path in ("/demo/shop/", "/admin/", "/api/v1/runs", "/login/", "/"):
        response = handler({**environ, "PATH_INFO": path, "QUERY_STRING": ""}, lambda status, headers: None)
        statuses[path] = response.status_code

    assert statuses == {"/demo/shop/": 200, "/admin/": 404, "/api/v1/runs": 404, "/login/": 404, "/": 302}
