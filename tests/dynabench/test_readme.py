"""The README stays short and its links work on a Git host; every docs page is reachable on the site.

The README is the front page (what it is, two screenshots, `make demo`, `make test`, `make serve`, links);
everything else lives in docs/, built by `make docs` from mkdocs.yml, whose nav must list every page
(MkDocs only reports a page missing from the nav, it does not fail on it).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 150
# [text](target) and ![alt](target); an optional "title" after the target is dropped.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def relative_targets(markdown: str) -> list[str]:
    """The link and image targets that are files of this repository (no scheme, not a bare #anchor)."""
    targets = []
    for target in LINK.findall(markdown):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def nav_pages(nav) -> list[str]:
    """Every page path in an mkdocs nav (a list of strings, or of {title: path or nested list})."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def test_the_readme_is_at_most_150_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_every_relative_link_and_image_of_the_readme_exists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = relative_targets(readme)
    assert "docs/images/create-verdict.png" in targets and "docs/images/leaderboard.png" in targets
    assert "docs/testing.md" in targets  # the pattern finds the links
    missing = sorted({target for target in targets if not (ROOT / target).is_file()})
    assert missing == [], f"README.md links to files that do not exist: {missing}"


def test_the_link_pattern_tells_relative_links_from_others():
    text = '[a](docs/api.md#part) ![b](docs/images/leaderboard.png "B") [c](https://example.org/x) [d](#top) [e](mailto:x@y)'
    assert relative_targets(text) == ["docs/api.md", "docs/images/leaderboard.png"]


def test_every_docs_page_is_in_the_mkdocs_nav_and_every_nav_page_exists():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = ROOT / config.get("docs_dir", "docs")
    listed = nav_pages(config["nav"])
    pages = sorted(path.relative_to(docs).as_posix() for path in docs.rglob("*.md"))
    assert "index.md" in pages and len(pages) > 10
    assert sorted(set(pages) - set(listed)) == [], "docs pages missing from mkdocs.yml's nav"
    assert sorted(page for page in listed if not (docs / page).is_file()) == [], "nav pages that do not exist"
    assert len(listed) == len(set(listed)), "a page listed twice in the nav"
