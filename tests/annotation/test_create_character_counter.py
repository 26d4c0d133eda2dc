"""The create page's live character counter: the text box carries its limit (``data-max-length``) and
no ``maxlength``, and create.js counts code points as the server does ("8 / 2,000", "2,010 / 2,000: 10
too many"), run under Node (tests/helpers/create_js.py)."""

from __future__ import annotations

import re

from django.urls import reverse

from tests.helpers.create_js import run_create_js as _run_script

URL = reverse("annotation:create", args=["hate-speech"])


def test_the_box_carries_its_limit_and_no_maxlength(writer):
    html = writer.get(URL).text
    box = re.search(r"<textarea [^>]*name=\"statement\"[^>]*>", html).group(0)
    assert 'data-max-length="2000"' in box
    assert "maxlength" not in box


def test_the_counter_counts_code_points_as_the_server_does():
    family = "👨\u200d👩\u200d👧"  # 5 code points, 8 UTF-16 units
    texts = [
        ["", 2000],
        ["I hate 🐷", 2000],  # the pig is one code point (two UTF-16 units)
        [family, 2000],
        ["x" * 123, 2000],
        ["😀" * 2000, 2000],  # at the limit: 4,000 UTF-16 units, still fine
        ["x" * 2010, 2000],
        ["ab\ncd", 1000],
    ]
    out = _run_script(texts=texts)["counts"]
    assert out == [
        [0, "0 / 2,000"],
        [8, "8 / 2,000"],
        [5, "5 / 2,000"],
        [123, "123 / 2,000"],
        [2000, "2,000 / 2,000"],
        [2010, "2,010 / 2,000: 10 too many"],
        [5, "5 / 1,000"],
    ]
    assert [len(t[0]) for t in texts] == [row[0] for row in out]  # Python's len counts code points too
