"""Demo site URLs: the landing page, the shop with its product pages, and the contact form."""

from django.urls import path

from . import views

app_name = "demo_site"
urlpatterns = [
    path("", views.landing, name="landing"),
    path("shop/", views.shop, name="shop"),
    path("shop/<slug:slug>/", views.product_detail, name="product"),
    path("contact/", views.contact, name="contact"),
    path("contact/thanks/", views.contact_thanks, name="contact_thanks"),
]
