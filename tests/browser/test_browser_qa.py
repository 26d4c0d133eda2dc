"""Select a QA answer with the mouse in a passage with emoji, a ZWJ sequence, Hebrew and Arabic.

The passage is ``PASSAGES[1]`` (tests/helpers/tiny_qa.py): "🎉 The party 👨‍👩‍👧 met at the cafe\u0301 in
מרכז העיר and then went home. قال الرئيس إن المدينة جميلة". The selection script
(annotation/static/annotation/span_select.js) turns a real browser selection into the answer and its
offset in code points, the unit the server stores; a browser counts UTF-16 units, so the two differ
after each emoji outside the BMP. Offsets by hand, counting code points:
  "👨‍👩‍👧 met": after "🎉"(1) " "(1) "The"(3) " "(1) "party"(5) " "(1) -> 12 (UTF-16: 13).
  "cafe\u0301 in מרכז העיר and": after "🎉 The party 👨‍👩‍👧 met at the " -> 12 + 5 ("👨‍👩‍👧") + 1 + 3 ("met")
  + 1 + 2 ("at") + 1 + 3 ("the") + 1 = 29 (UTF-16: 33; the ZWJ family is 5 code points, 8 UTF-16 units);
  its Hebrew starts at 29 + 5 ("cafe" and U+0301) + 1 + 2 ("in") + 1 = 38.
  "الرئيس" (Arabic, selected right to left): 38 + 9 ("מרכז העיר") + 21 (" and then went home. ") + 3 ("قال")
  + 1 = 72.
"""

from __future__ import annotations

import unicodedata

from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Example
from tests.factories.annotation import make_example

# The client rectangles of the first and the last code point of the ``nth`` occurrence (0: the first) of
# ``text`` in the passage paragraph, found through the DOM (a Range over the text node), so the mouse can
# press and release on them.
_CHAR_BOXES = """([selector, text, nth]) => {
    const passage = document.querySelector(selector);
    const walker = document.createTreeWalker(passage, NodeFilter.SHOW_TEXT);
    const points = Array.from(text);
    let left = nth;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        let at = node.data.indexOf(text);
        while (at >= 0 && left > 0) {
            at = node.data.indexOf(text, at + text.length);
            left -= 1;
        }
        if (at < 0) continue;
        const box = (from, to) => {
            const range = document.createRange();
            range.setStart(node, from);
            range.setEnd(node, to);
            const r = range.getBoundingClientRect();
            return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
        };
        const end = at + text.length;
        return {first: box(at, at + points[0].length), last: box(end - points[points.length - 1].length, end)};
    }
    return null;
}"""


def _is_rtl(character: str) -> bool:
    return unicodedata.bidirectional(character) in ("R", "AL")


def _drag_select(page, selector: str, text: str, nth: int = 0) -> None:
    """Select ``text`` (its ``nth`` occurrence, 0 the first) in the element ``selector`` by dragging the
    mouse from its first to its last character, each pressed near its leading edge in reading order (the
    right one for Hebrew).

    An end at the edge of a line is ambiguous in mixed-direction text (the right edge of a Hebrew word
    ending a line is also the line's end), so the tests select spans whose ends are mid-line."""
    page.locator(selector).scroll_into_view_if_needed()
    boxes = page.evaluate(_CHAR_BOXES, [selector, text, nth])
    assert boxes, f"{text!r} is not in {selector}"
    first, last = boxes["first"], boxes["last"]
    y0 = (first["top"] + first["bottom"]) / 2
    y1 = (last["top"] + last["bottom"]) / 2
    # press just inside the leading edge of the first character, release just inside the trailing
    # edge of the last one: the selection snaps to the nearest character boundaries
    x0 = first["right"] - 1 if _is_rtl(text[0]) else first["left"] + 1
    x1 = last["left"] + 1 if _is_rtl(text[-1]) else last["right"] - 1
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=4)
    page.mouse.move(x1, y1, steps=4)
    page.mouse.up()


def test_select_an_answer_with_the_mouse_in_emoji_and_right_to_left_text(
    run, tiny_qa_registered_model, qa_contexts, outsider, annotator
):
    # passage 0 already has an example, so the least-used rule serves passage 1
    make_example(
        qa_contexts[0].round,
        outsider,
        context=qa_contexts[0],
        inputs={"question": "Who?"},
        target={"answer": "Denver Broncos", "answer_start": 49},
    )
    page = run.page_for(annotator)
    page.goto(reverse("annotation:create", args=["qa"]))
    passage = "form.example-form section.context p.span-passage"
    expect(page.locator(passage)).to_contain_text("מרכז העיר")
    answer = page.locator("input.span-answer")
    start = page.locator("input.span-answer-start")
    run.check(page, "passage")

    _drag_select(page, passage, "👨‍👩‍👧 met")
    expect(answer).to_have_value("👨‍👩‍👧 met")
    expect(start).to_have_value("12")
    expect(page.locator("#span-status")).to_contain_text("character 12")

    _drag_select(page, passage, "الرئيس")  # right to left, from its right edge
    expect(answer).to_have_value("الرئيس")
    expect(start).to_have_value("72")

    # Latin, a combining accent, Hebrew across the line break of the phone width, Latin again
    span = "cafe\u0301 in מרכז העיר and"
    _drag_select(page, passage, span)
    expect(answer).to_have_value(span)
    expect(start).to_have_value("29")
    run.check(page, "selected-rtl")

    page.get_by_label("Question").fill("Where did they meet?")
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.locator("#verdict")).to_contain_text("from character 29 of the passage")
    run.check(page, "verdict")
    example = Example.objects.get(annotator=annotator)
    assert example.context_id == qa_contexts[1].pk
    assert example.inputs == {"question": "Where did they meet?"}
    assert example.target == {"answer": span, "answer_start": 29}
    run.assert_clean()


# "Paris" three times; the third starts at code point 66 (by hand: tests/annotation/test_qa_try_a_variation.py).
PARIS = "Paris is a city. Many people visit Paris in spring. The Louvre in Paris is a museum."


def test_try_a_variation_keeps_the_occurrence_selected(run, qa_task, annotator, monkeypatch):
    from models_registry import inference
    from tests.factories.models_registry import make_stand_in
    from tests.factories.tasks import ContextFactory, open_round

    monkeypatch.setattr(
        inference, "predict", lambda model, inputs: [{"answer": "The Louvre", "score": 0.9}] * len(inputs)
    )
    round_ = open_round(qa_task)
    make_stand_in(qa_task, round_)
    context = ContextFactory(round=round_, data={"title": "Paris", "context": PARIS})
    page = run.page_for(annotator)
    page.goto(reverse("annotation:create", args=["qa"]))
    passage = "form.example-form section.context p.span-passage"
    _drag_select(page, passage, "Paris", nth=2)  # the third "Paris", after "The Louvre in"
    expect(page.locator("input.span-answer")).to_have_value("Paris")
    expect(page.locator("input.span-answer-start")).to_have_value("66")
    page.get_by_label("Question").fill("Where is the Louvre?")
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.locator("#verdict")).to_contain_text("from character 66 of the passage")

    page.get_by_role("link", name="Open this example's page").click()
    page.get_by_role("link", name="Try a variation").click()
    expect(page.locator("input.span-answer")).to_have_value("Paris")
    expect(page.locator("input.span-answer-start")).to_have_value("66")
    expect(page.locator("#span-status")).to_contain_text("character 66")
    run.check(page, "variation")
    page.get_by_label("Question").fill("In which city is the Louvre?")
    page.get_by_role("button", name="Submit to the model").click()
    expect(page.locator("#verdict")).to_contain_text("from character 66 of the passage")
    first, variation = Example.objects.order_by("pk")
    assert first.target == variation.target == {"answer": "Paris", "answer_start": 66}
    assert variation.inputs == {"question": "In which city is the Louvre?"}
    assert variation.context_id == context.pk
    run.assert_clean()
