"""docs/README.md is the index of the documentation: every page under docs/ is linked from it, and every link in it
and in the README leads to a file that exists."""

import re

from tests.support.paths import REPO

DOCS = REPO / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def local_links(page):
    return [target for target in LINK.findall(page.read_text()) if "://" not in target]


def test_every_page_of_docs_is_in_the_index():
    linked = {(DOCS / target).resolve() for target in local_links(DOCS / "README.md")}
    pages = {page.resolve() for page in DOCS.glob("*.md") if page.name != "README.md"}
    assert sorted(page.name for page in pages - linked) == []


def test_every_local_link_of_the_readme_and_the_index_exists():
    for page in (REPO / "README.md", DOCS / "README.md"):
        missing = [target for target in local_links(page) if not (page.parent / target).exists()]
        assert missing == [], f"{page.name} links to missing files"
