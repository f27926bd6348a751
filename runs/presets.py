"""The launch form's presets: the bundled demo tasks, what the scripted model knows how to do against the demo site
(offered on the launch form and seeded on first start)."""

from pathlib import Path
from typing import Any

ITEMS_SCHEMA = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
                "required": ["name", "price"],
            },
        }
    },
    "required": ["items"],
    "additionalProperties": False,
}

LIST_PRODUCTS = "List the products on the first page of the demo shop with their prices."
CONTACT = "Send the demo shop's contact form asking how to return the Cedar Notebook."
DOWNLOAD_INVOICE = "Download the November invoice from the demo shop's invoice page and say what arrived."
UPLOAD_DOCUMENT = (
    "Upload the file you were given on the demo shop's upload page and report the SHA-256 the shop shows for it."
)
SIGN_IN = (
    "Sign in to my demo shop account with the email and password in this run's secrets, then say who is signed in."
)
ACCOUNT = "Open my demo shop account page and tell me who is signed in, without signing in again."
# The profile the two sign-in presets share: the first signs in and saves it, the second lands signed in with it.
DEMO_PROFILE_NAME = "Demo shop account"
# The demo customer (demo_site.account), as run secrets: the agent types placeholders, never sees them.
DEMO_SECRETS = {"SHOP_USER": "ada@example.com", "SHOP_PASSWORD": "northwind-demo"}
# The file the seeded upload run is given, so a first start's upload demo has something to upload.
SAMPLE_UPLOAD = Path(__file__).resolve().parent.parent / "demo_site" / "samples" / "delivery-note.txt"
CONFIRMATION_CODE = (
    "Ask me for my order's confirmation code, then send the demo shop's contact form asking how to return the Cedar "
    "Notebook, quoting the code."
)


def demo_tasks(base_url: str) -> list[dict[str, Any]]:
    """Launch arguments for each demo task, with start URLs under `base_url` (the demo site's own server). A task
    with `profile` runs on the workspace's profile of that name (the launch form selects it; seed_demo creates it)."""
    root = base_url.rstrip("/")
    return [
        {
            "label": "Demo shop: list first-page products (judged)",
            "task": LIST_PRODUCTS,
            "start_url": f"{root}/demo/shop/",
            "output_schema": ITEMS_SCHEMA,
            "judge": True,
            "judge_context": ["A product's price is the number shown next to its name on the listing page."],
        },
        {
            "label": "Demo shop: products, graded against a rubric",
            "task": LIST_PRODUCTS,
            "start_url": f"{root}/demo/shop/",
            "output_schema": ITEMS_SCHEMA,
            "outcome": {
                "description": "Every product on the first page of the demo shop, with its exact price.",
                "rubric": "- Lists every product shown on the first page\n- Each price matches the page exactly\n"
                "- No product from another page",
                "max_iterations": 3,
            },
        },
        {
            "label": "Demo shop: contact form",
            "task": CONTACT,
            "start_url": f"{root}/demo/contact/",
            "judge": True,
        },
        {
            "label": "Demo shop: download the invoice (judged)",
            "task": DOWNLOAD_INVOICE,
            "start_url": f"{root}/demo/invoice/",
            "judge": True,
            "judge_context": ["The invoice is delivered when the run downloaded a CSV file of it."],
        },
        {
            "label": "Demo shop: upload a file (attach one below)",
            "task": UPLOAD_DOCUMENT,
            "start_url": f"{root}/demo/upload/",
            "sample_file": SAMPLE_UPLOAD,  # seeded with it; from the launch form the operator attaches one
        },
        {
            "label": "Demo shop: sign in, save to a profile",
            "task": SIGN_IN,
            "start_url": f"{root}/demo/account/sign-in/",
            "secrets": DEMO_SECRETS,
            "profile": DEMO_PROFILE_NAME,
        },
        {
            "label": "Demo shop: account via the profile",
            "task": ACCOUNT,
            "start_url": f"{root}/demo/account/",
            "profile": DEMO_PROFILE_NAME,
            "seed": False,  # it needs the sign-in's profile saved first: the operator launches it after
        },
        {
            # waits for a person: the run page asks for the code (any 4+ characters) and the runs list marks it
            "label": "Demo shop: ask me for a code",
            "task": CONFIRMATION_CODE,
            "start_url": f"{root}/demo/contact/",
        },
    ]
