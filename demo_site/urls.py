"""Demo site URLs: the landing page, the shop with its product pages, the contact form, the invoice, the upload form
and the customer account."""

from django.urls import path

from . import account, files_views, views

app_name = "demo_site"
urlpatterns = [
    path("", views.landing, name="landing"),
    path("shop/", views.shop, name="shop"),
    path("shop/<slug:slug>/", views.product_detail, name="product"),
    path("contact/", views.contact, name="contact"),
    path("contact/thanks/", views.contact_thanks, name="contact_thanks"),
    path("invoice/", files_views.invoice, name="invoice"),
    path("invoice/download/", files_views.invoice_download, name="invoice_download"),
    path("upload/", files_views.upload, name="upload"),
    path("account/", account.account, name="account"),
    path("account/sign-in/", account.sign_in, name="sign_in"),
    path("account/sign-out/", account.sign_out, name="sign_out"),
]
