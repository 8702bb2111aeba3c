"""Every relative link in the README, docs/ and benchmarks/ (history/ included) reaches a file that exists,
and a link to a heading (`page.md#soak`) names a heading that page has, as GitHub spells its anchors.
A page moved into another folder keeps links written for its old place; this catches them."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", ROOT / "assets" / "models" / "README.md", *(ROOT / "docs").glob("*.md"),
                *(ROOT / "benchmarks").rglob("*.md")])
LINK = re.compile(r"\]\(([^()\s]+)\)")          # [text](target): markdown's inline link
FENCE = re.compile(r"^```.*?^```", re.M | re.S)  # links inside code blocks are not links


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", FENCE.sub("", page.read_text()), re.M)}


def links(page: Path):
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if not re.match(r"[a-z]+:", target):        # http:, https:, mailto: are not checked here
            yield target


def test_the_pages_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/page.md", "benchmarks/README.md", "benchmarks/history/notes-2026-11.md"} <= names


def test_every_relative_link_resolves_and_every_anchor_is_a_heading():
    broken = []
    for page in PAGES:
        for target in links(page):
            path, _, fragment = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif fragment and where.suffix == ".md" and fragment not in anchors(where):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_anchor_rule_is_githubs():
    assert anchor("Load test") == "load-test"
    assert anchor("Load test, third round: one client, many kinds of hold") == \
        "load-test-third-round-one-client-many-kinds-of-hold"
    assert anchor("The page: one pattern per tab") == "the-page-one-pattern-per-tab"
