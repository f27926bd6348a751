"""The launch form's presets: the bundled demo tasks, what the scripted model knows how to do against the demo site
(offered on the launch form and seeded on first start)."""

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
CONFIRMATION_CODE = (
    "Ask me for my order's confirmation code, then send the demo shop's contact form asking how to return the Cedar "
    "Notebook, quoting the code."
)


def demo_tasks(base_url: str) -> list[dict[str, Any]]:
    """Launch arguments for each demo task, with start URLs under `base_url` (the demo site's own server)."""
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
            # waits for a person: the run page asks for the code (any 4+ characters) and the runs list marks it
            "label": "Demo shop: ask me for a code",
            "task": CONFIRMATION_CODE,
            "start_url": f"{root}/demo/contact/",
        },
    ]
