"""See why the model decided: token attributions on the create page's in-page verdict, with a real
(tiny, random) classifier as the target, on a statement with emoji.

The preprocessing reads emoji as their names (":snake:"), but the highlighted text is the annotator's
own: its text content must equal the statement, emoji included.
"""

from __future__ import annotations

from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Example

STATEMENT = "Those 🐍 people 👨‍👩‍👧 should leave"


def test_the_verdict_explains_which_words_drove_the_model(run, tiny_registered_model, annotator):
    page = run.page_for(annotator)
    page.goto(reverse("annotation:create", args=["hate-speech"]))
    page.get_by_label("Statement").fill(STATEMENT)
    page.locator("input[name=label][value=hateful]").check()
    page.get_by_role("button", name="Submit to the model").click()
    verdict = page.locator("#verdict")
    expect(verdict.locator(".outcome")).to_be_visible()
    why = verdict.locator("details.why")
    why.locator("summary").click()  # opening it loads the attributions
    attributions = why.locator("section.attributions")
    expect(attributions).to_be_visible(timeout=30_000)
    text = attributions.locator("p.attributions-text")
    expect(text).to_have_count(1)
    assert text.text_content() == STATEMENT  # on the original characters, emoji and all
    assert attributions.locator("mark.attr").count() >= 3
    expect(attributions.locator("ol.attributions-top li").first).to_be_visible()
    expect(attributions.locator(".attributions-check")).to_contain_text("Integrated gradients")
    expect(attributions.locator(".attributions-check")).not_to_contain_text("not met here")
    run.check(page, "attributions")

    example = Example.objects.get()
    page.goto(reverse("annotation:outcome", args=[example.pk]))  # the outcome page has it too
    page.locator("details.why summary").click()
    expect(page.locator("details.why section.attributions")).to_be_visible(timeout=30_000)
    run.check(page, "outcome-attributions")
    run.assert_clean()


ARABIC_TWO_LINES = "المهاجرون حشرات 🐀\nThey are vermin."


def test_arabic_words_are_one_mark_each_and_the_newline_is_kept(
    run, tiny_registered_model, hate_task, annotator
):
    from annotation.services import create_example

    example, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": ARABIC_TWO_LINES}, target="hateful"
    )
    page = run.page_for(annotator)
    page.goto(reverse("annotation:why", args=[example.pk]))  # the page without the details around it
    section = page.locator("section.attributions")
    expect(section).to_be_visible(timeout=30_000)
    text = section.locator("p.attributions-text")
    assert text.text_content() == ARABIC_TWO_LINES
    marks = text.locator("mark.attr")
    # one mark per word: the tiny vocabulary spells "vermin" letter by letter, yet it is one word
    assert marks.all_text_contents() == ["المهاجرون", "حشرات", "🐀", "They", "are", "vermin."]
    first, last = marks.first.bounding_box(), marks.last.bounding_box()
    assert last["y"] > first["y"] + first["height"] / 2  # the second line is below the first
    expect(section.locator(".attributions-baseline")).to_contain_text("With every word blanked, the model")
    expect(section.locator(".attributions-top-heading")).to_have_text(
        "Words that moved the model most (either way):"
    )
    run.check(page, "arabic")
    run.assert_clean()


def test_the_explanation_states_the_verdicts_probability_and_names_the_runtime(
    run, tiny_registered_model, hate_task, annotator
):
    from annotation.services import create_example

    example, _ = create_example(
        task=hate_task,
        annotator=annotator,
        inputs={"statement": "Those people should leave"},
        target="hateful",
    )
    # As the ONNX int8 model serving it would have answered: its label at 61.5 %, which the tiny model's
    # PyTorch weights (where the attributions are computed) do not give.
    prediction = example.predictions.get()
    label = prediction.label
    [other] = [name for name in hate_task.cfg.labels if name != label]
    prediction.runtime = "onnx-int8"
    prediction.output = {"label": label, "probabilities": {label: 0.615, other: 0.385}}
    prediction.model_wrong = False
    prediction.save()
    # the verdict's bar shows the intended label's probability: make it the model's label
    example.target, example.model_wrong = label, False
    example.save()

    page = run.page_for(annotator)
    page.goto(reverse("annotation:outcome", args=[example.pk]))
    expect(page.locator(".target-probability .meter-value")).to_have_text("61.5%")
    page.locator("details.why summary").click()
    section = page.locator("details.why section.attributions")
    expect(section).to_be_visible(timeout=30_000)
    served = section.locator(".attributions-served")
    expect(served).to_contain_text(f"The served model (ONNX Runtime, int8 weights) gave {label} 61.5%.")
    expect(served).to_contain_text("The attributions are computed on its PyTorch weights")
    run.check(page, "served-runtime")
    run.assert_clean()
