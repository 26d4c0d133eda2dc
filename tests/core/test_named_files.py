"""Docstrings, comments and docs name only files that exist.

A path such as ``dynabench/api_urls.py`` in a docstring is how a reader finds the code it speaks of; one
that names a file moved or never written (six docstrings named an ``api/urls.py`` inside ``dynabench/``) sends the
reader nowhere. Checked: every ``<folder>/.../<name>.py`` or ``.md`` whose first folder is a top-level
folder of the repository, in the project's Python, Markdown, shell and TOML files. A template's name
(``cycle/release_readme.md``) counts when a file of that name sits in a ``templates/`` folder.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w-]+\.(?:py|md|sh))\b")


def _tracked(*patterns: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_every_repository_path_named_in_the_sources_exists():
    top = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
    templates = {name.split("/templates/", 1)[1] for name in _tracked() if "/templates/" in name}
    missing = []
    for name in _tracked("*.py", "*.md", "*.sh", "*.toml", "Makefile"):
        for match in PATH.finditer((ROOT / name).read_text(encoding="utf-8")):
            path = match.group(1)
            if path.split("/", 1)[0] in top and not (ROOT / path).exists() and path not in templates:
                missing.append(f"{name}: {path}")
    assert missing == []


def test_the_check_finds_a_missing_file():
    missing = "dynabench/api/" + "urls.py"  # spelt in two, so that this file names no missing file
    assert PATH.findall(f"mounted by ``{missing}``; see docs/domain.md") == [missing, "docs/domain.md"]
