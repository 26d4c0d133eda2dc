"""Wide tables on phones (390 px): each of the task page's, the quality page's and the annotator
leaderboard's tables sits in a ``table-scroll`` box that scrolls sideways by itself (site.css), so the
page and its header stay the screen's width. Checked on the rendered HTML (no browser)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings

from tests.factories.annotation import make_example

pytestmark = pytest.mark.django_db

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


class _TableParents(HTMLParser):
    """Records, for each ``<table>``, its class and the tag and class of the element it sits in."""

    def __init__(self):
        super().__init__()
        self.stack: list[tuple[str, str]] = []
        self.tables: dict[str, tuple[str, str]] = {}

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag == "table":
            self.tables[cls] = self.stack[-1] if self.stack else ("", "")
        if tag not in VOID:
            self.stack.append((tag, cls))

    def handle_endtag(self, tag):
        while self.stack:  # tolerate an unclosed <p> and the like
            if self.stack.pop()[0] == tag:
                break


def _parents(response) -> dict[str, tuple[str, str]]:
    assert response.status_code == 200
    parser = _TableParents()
    parser.feed(response.content.decode())
    return parser.tables


def test_the_stylesheet_makes_the_box_scroll():
    css = (Path(settings.BASE_DIR) / "dynabench/static/dynabench/site.css").read_text()
    assert ".table-scroll { overflow-x: auto;" in css


def test_the_task_page_round_table_scrolls_in_its_box(client, hate_round):
    assert _parents(client.get("/tasks/hate-speech/")) == {"round-counts": ("div", "table-scroll")}


def test_the_quality_page_tables_scroll_in_their_boxes(client, owner, password, hate_round, annotator):
    make_example(hate_round, annotator, status="validated_correct")
    assert client.login(username=owner.username, password=password)
    assert _parents(client.get("/tasks/hate-speech/rounds/1/quality/")) == {
        "quality-validators": ("div", "table-scroll"),
        "quality-annotators": ("div", "table-scroll"),
    }


def test_the_annotator_leaderboard_scrolls_in_its_box(client, hate_round, annotator):
    make_example(hate_round, annotator, status="validated_correct")
    assert _parents(client.get("/tasks/hate-speech/annotators/?round=1")) == {
        "annotator-board": ("div", "table-scroll")
    }
