"""Site-wide accessibility basics (WCAG 2.2): a "Skip to content" link as the first focusable element,
aimed at ``<main id="content">``; visible focus and 24 x 24 px targets in site.css; and a label for every
box on the task list, "My examples", the leaderboard and a model's page. Checked on the rendered HTML."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tests.factories.annotation import make_example
from tests.factories.leaderboards import DatasetFactory, ScoreFactory

pytestmark = pytest.mark.django_db

FOCUSABLE = {"a", "button", "input", "select", "textarea"}


class _Page(HTMLParser):
    """The focusable elements in document order, the boxes (inputs, selects, text areas) with their
    labelling, and the ``main`` element's id."""

    def __init__(self):
        super().__init__()
        self.focusable: list[tuple[str, dict]] = []
        self.boxes: list[dict] = []
        self.label_for: set[str] = set()
        self.open_labels = 0
        self.main_id = None
        self.in_body = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.in_body = True
        if tag == "main":
            self.main_id = a.get("id")
        if tag == "label":
            self.open_labels += 1
            if a.get("for"):
                self.label_for.add(a["for"])
        if not self.in_body:
            return
        if (
            tag in FOCUSABLE
            and not (tag == "input" and a.get("type") == "hidden")
            and (tag != "a" or "href" in a)
        ):
            self.focusable.append((tag, a))
        if tag in ("select", "textarea") or (
            tag == "input" and a.get("type") not in ("hidden", "submit", "button", "reset")
        ):
            self.boxes.append({**a, "_tag": tag, "_wrapped": self.open_labels > 0})

    def handle_endtag(self, tag):
        if tag == "label":
            self.open_labels -= 1


def _parse(response) -> _Page:
    assert response.status_code == 200
    page = _Page()
    page.feed(response.content.decode())
    return page


def _unlabelled(page: _Page) -> list[dict]:
    return [
        box
        for box in page.boxes
        if not (box["_wrapped"] or box.get("id") in page.label_for or box.get("aria-label"))
    ]


def test_skip_link_is_first_and_targets_main(client, hate_round):
    page = _parse(client.get(reverse("tasks:list")))
    tag, attrs = page.focusable[0]
    assert (tag, attrs.get("href"), attrs.get("class")) == ("a", "#content", "skip-link")
    assert page.main_id == "content"
    assert "Skip to content</a>" in client.get(reverse("tasks:list")).text


def test_stylesheet_has_visible_focus_and_24px_targets():
    css = (Path(settings.BASE_DIR) / "dynabench/static/dynabench/site.css").read_text()
    assert ":focus-visible { outline: 3px solid" in css
    assert ".skip-link:focus { top: .5rem; }" in css
    assert "button, a.button, input[type=submit], select { min-height: 24px; min-width: 24px; }" in css
    assert "input[type=radio], input[type=checkbox] { width: 24px; height: 24px;" in css
    assert (
        ".site-header nav a, .site-header nav button.link { display: inline-flex; align-items: center; min-height: 24px;"
        in css
    )


def test_every_box_on_these_pages_has_a_label(client, annotator, password, hate_round, make_model):
    model = make_model("labelled")
    ScoreFactory(
        model=model, dataset=DatasetFactory(task=hate_round.task, slug="r1", round=hate_round), perf=0.7
    )
    make_example(hate_round, annotator)
    client.login(username=annotator.username, password=password)
    pages = [
        reverse("tasks:list"),
        reverse("annotation:my_examples"),
        reverse("leaderboards:leaderboard", args=[hate_round.task.slug]),
        reverse("leaderboards:model", args=[model.pk]),
    ]
    for url in pages:
        page = _parse(client.get(url))
        assert page.focusable[0][1].get("href") == "#content", url
        assert _unlabelled(page) == [], url
    # The pages do have boxes: the filters, the sliders and round, the interact box.
    counts = [len(_parse(client.get(url)).boxes) for url in pages[1:]]
    assert counts[0] == 4 and counts[1] >= 7 and counts[2] >= 1, counts
