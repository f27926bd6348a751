"""Where the repository and the served test pages are."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = REPO / "tests" / "pages"
