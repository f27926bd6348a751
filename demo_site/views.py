"""The demo shop's pages: a product list in pages of four, product details, and a contact form that echoes back."""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django import forms
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

PRODUCTS_PER_PAGE = 4
# The contact form's submit button. A site changes its wording now and then; tests of recipes that heal change this to
# see a replay meet a button it no longer finds by name.
SEND_BUTTON_LABEL = "Send message"


@dataclass(frozen=True)
class Product:
    name: str
    slug: str
    price: Decimal
    description: str


PRODUCTS: tuple[Product, ...] = (
    Product("Aurora Desk Lamp", "aurora-desk-lamp", Decimal("49.00"), "A warm LED lamp with three brightness levels."),
    Product("Basalt Coffee Mug", "basalt-coffee-mug", Decimal("14.50"), "Stoneware, 350 ml, dishwasher safe."),
    Product("Cedar Notebook", "cedar-notebook", Decimal("9.99"), "A5, 120 dotted pages, lies flat when open."),
    Product("Drift Wool Socks", "drift-wool-socks", Decimal("19.99"), "Merino blend, sizes 36 to 46."),
    Product("Ember Travel Kettle", "ember-travel-kettle", Decimal("34.90"), "0.5 litre, folds to the size of a book."),
    Product("Fjord Water Bottle", "fjord-water-bottle", Decimal("24.00"), "Insulated steel, keeps cold for 24 hours."),
    Product("Grove Plant Pot", "grove-plant-pot", Decimal("17.25"), "Terracotta with a drainage saucer, 14 cm."),
    Product("Harbor Canvas Tote", "harbor-canvas-tote", Decimal("22.00"), "Heavy cotton canvas with an inner pocket."),
    Product("Iris Scented Candle", "iris-scented-candle", Decimal("18.75"), "Soy wax, 40 hours of burn time."),
    Product("Juniper Tea Sampler", "juniper-tea-sampler", Decimal("27.40"), "Six loose-leaf teas in small tins."),
    Product("Kestrel Umbrella", "kestrel-umbrella", Decimal("39.00"), "Wind-resistant frame, automatic opening."),
    Product("Lumen Bike Light", "lumen-bike-light", Decimal("29.95"), "USB rechargeable, front and rear set."),
)


def product_by_slug(slug: str) -> Product | None:
    return next((product for product in PRODUCTS if product.slug == slug), None)


class ContactForm(forms.Form):
    TOPICS = [
        ("order", "A question about an order"),
        ("returns", "Returns and refunds"),
        ("wholesale", "Wholesale enquiry"),
        ("other", "Something else"),
    ]

    name = forms.CharField(label="Your name", max_length=100)
    email = forms.EmailField(label="Email address")
    topic = forms.ChoiceField(label="Topic", choices=TOPICS)
    message = forms.CharField(label="Message", widget=forms.Textarea(attrs={"rows": 5}), max_length=2000)
    subscribe = forms.BooleanField(label="Subscribe to the newsletter", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Plain labels ("Your name", not "Your name:") read better beside a checkbox and in the accessibility tree.
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


def landing(request: HttpRequest) -> HttpResponse:
    return render(request, "demo_site/landing.html", {"product_count": len(PRODUCTS)})


def shop(request: HttpRequest) -> HttpResponse:
    # get_page clamps a missing, bad or too large ?page= to a real page, as most shops do.
    page = Paginator(PRODUCTS, PRODUCTS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "demo_site/shop.html", {"page": page})


def product_detail(request: HttpRequest, slug: str) -> HttpResponse:
    product = product_by_slug(slug)
    if product is None:
        raise Http404("No such product")
    return render(request, "demo_site/product.html", {"product": product})


def contact(request: HttpRequest) -> HttpResponse:
    return render(request, "demo_site/contact.html", {"form": ContactForm(), "send_label": SEND_BUTTON_LABEL})


@require_http_methods(["GET", "POST"])
def contact_thanks(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return redirect("demo_site:contact")
    form = ContactForm(request.POST)
    if not form.is_valid():
        return render(request, "demo_site/contact.html", {"form": form, "send_label": SEND_BUTTON_LABEL}, status=400)
    topic_label = dict(ContactForm.TOPICS)[form.cleaned_data["topic"]]
    return render(request, "demo_site/thanks.html", {"data": form.cleaned_data, "topic_label": topic_label})


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The demo server's 404: plain, since the app's own error page links to the app (not served on this origin)."""
    return HttpResponse("<!doctype html><title>Not Found</title><h1>Not Found</h1>", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    return HttpResponse("<!doctype html><title>Server error</title><h1>Server error</h1>", status=500)
