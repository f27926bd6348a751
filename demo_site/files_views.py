"""The demo shop's files: an invoice page whose "Download invoice" answers with an attachment (a CSV), and an upload
form that shows what it received (name, size, sha256), for the demo runs that download and upload."""

import hashlib

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

INVOICE_NAME = "invoice-2026-11.csv"
INVOICE_LINES = (
    ("Cedar Notebook", 2, "9.99"),
    ("Basalt Coffee Mug", 1, "14.50"),
    ("Lumen Bike Light", 1, "29.95"),
)
# An upload the demo keeps no copy of; past this it says the file was too large to read.
UPLOAD_MAX_BYTES = 5 * 1024 * 1024


def invoice_csv() -> bytes:
    rows = ["item,quantity,unit_price"] + [f"{name},{quantity},{price}" for name, quantity, price in INVOICE_LINES]
    total = sum(quantity * float(price) for _name, quantity, price in INVOICE_LINES)
    rows.append(f"total,,{total:.2f}")
    return ("\n".join(rows) + "\n").encode()


def invoice(request: HttpRequest) -> HttpResponse:
    return render(request, "demo_site/invoice.html", {"lines": INVOICE_LINES, "name": INVOICE_NAME})


def invoice_download(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(invoice_csv(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{INVOICE_NAME}"'
    return response


@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    received = None
    if request.method == "POST":
        document = request.FILES.get("document")
        if document is not None and (document.size or 0) <= UPLOAD_MAX_BYTES:
            digest = hashlib.sha256()
            for chunk in document.chunks():
                digest.update(chunk)
            received = {"name": document.name, "size": document.size, "sha256": digest.hexdigest()}
        elif document is not None:
            received = {"name": document.name, "size": document.size, "sha256": "(too large to read)"}
    return render(request, "demo_site/upload.html", {"received": received})
