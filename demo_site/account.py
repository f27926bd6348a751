"""The demo shop's customer account: a sign-in form whose answer sets a server session cookie (signed, HttpOnly) and
remembers the customer in the page's local storage, and an account page that says who is signed in. What a profile
keeps (docs/profiles.md) is exactly these two: the demo's profile tasks sign in here once and land signed in later."""

import hmac

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

# The one demo customer; the sign-in page shows the credentials, since nothing here is real.
DEMO_CUSTOMER = {"email": "ada@example.com", "password": "northwind-demo", "name": "Ada Lovelace"}
SESSION_COOKIE = "northwind_session"
SESSION_SALT = "demo_site.account"
SESSION_SECONDS = 30 * 24 * 3600


class SignInForm(forms.Form):
    email = forms.EmailField(label="Email address")
    password = forms.CharField(label="Password", widget=forms.PasswordInput)

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        email, password = str(cleaned.get("email", "")), str(cleaned.get("password", ""))
        right = email.lower() == DEMO_CUSTOMER["email"] and hmac.compare_digest(password, DEMO_CUSTOMER["password"])
        if (email or password) and not right:
            raise forms.ValidationError("That email address and password do not match an account.")
        return cleaned


def signed_in_email(request: HttpRequest) -> str | None:
    email: str | None = request.get_signed_cookie(
        SESSION_COOKIE, default=None, salt=SESSION_SALT, max_age=SESSION_SECONDS
    )
    return email


@require_http_methods(["GET", "POST"])
def sign_in(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return render(request, "demo_site/sign_in.html", {"form": SignInForm(), "demo": DEMO_CUSTOMER})
    form = SignInForm(request.POST)
    if not form.is_valid():
        return render(request, "demo_site/sign_in.html", {"form": form, "demo": DEMO_CUSTOMER}, status=400)
    response = render(request, "demo_site/signed_in.html", {"name": DEMO_CUSTOMER["name"]})
    response.set_signed_cookie(
        SESSION_COOKIE,
        DEMO_CUSTOMER["email"],
        salt=SESSION_SALT,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="Lax",
    )
    return response


def account(request: HttpRequest) -> HttpResponse:
    email = signed_in_email(request)
    name = DEMO_CUSTOMER["name"] if email == DEMO_CUSTOMER["email"] else None
    return render(request, "demo_site/account.html", {"email": email if name else None, "name": name})


@require_http_methods(["POST"])
def sign_out(request: HttpRequest) -> HttpResponse:
    response = render(request, "demo_site/account.html", {"email": None, "name": None, "signed_out": True})
    response.delete_cookie(SESSION_COOKIE, samesite="Lax")
    return response
