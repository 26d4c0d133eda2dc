"""Every other page an annotator, a validator or an owner meets, each screenshotted and audited by axe.

The flows (sign-up, create, validate, QA, leaderboard, admin) check their own pages; this one visits
the rest with a little data in place: a task page, the model page's "Try it" box (a real tiny
classifier answers, with its attributions), the annotator leaderboard, a round's page with its
artefact probes, the profile and statistics
pages, the owner's review, quality and dashboard pages, the log-in page and a 404.
"""

from __future__ import annotations

from django.urls import reverse
from playwright.sync_api import expect
from rest_framework.authtoken.models import Token

from annotation.services import create_example
from cycle.probes.services import run_round_probes
from tests.factories.annotation import make_example
from tests.factories.validation import submit_served


def test_the_other_pages_pass_axe(
    run, tiny_registered_model, hate_task, hate_round, owner, annotator, validator
):
    examples = [
        create_example(task=hate_task, annotator=annotator, inputs={"statement": text}, target=label)[0]
        for text, label in (("Those 🐍 people should leave", "hateful"), ("What a lovely day", "not-hateful"))
    ]
    submit_served(example=examples[0], validator=validator, verdict="correct")

    # The card's ONNX check table and the profile's curl line with a key: both once made a phone's page
    # wider than its screen.
    check = {"n": 300, "label_agreement": 0.996667, "max_probability_difference": 0.155561, "passed": True}
    tiny_registered_model.card = {
        **(tiny_registered_model.card or {}),
        "runtime": {"runtime": "torch", "message": "", "checks": {"onnx-fp32": check, "onnx-int8": check}},
    }
    tiny_registered_model.save(update_fields=["card"])
    Token.objects.get_or_create(user=annotator)
    # The round page's artefact probes, measured: ten validated examples per label, two writers.
    for i in range(20):
        label = "hateful" if i % 2 else "not-hateful"
        text = f"{'🐍 they' if i % 2 else 'a lovely day'} {i}"
        make_example(hate_round, (annotator, validator)[i % 2], label=label, status="validated_correct",
                     inputs={"statement": text})  # fmt: skip
    run_round_probes(round_=hate_round)

    page = run.page_for(annotator)
    page.goto(reverse("tasks:detail", args=[hate_task.slug]))
    run.check(page, "task-detail")
    page.goto(reverse("leaderboards:model", args=[tiny_registered_model.pk]))
    run.check(page, "model")
    page.get_by_label("Statement").fill("Those 🐍 people should leave")
    page.get_by_role("button", name="Ask the model").click()
    expect(page.locator(".predicted-label")).to_have_text(examples[0].predictions.get().label)
    expect(page.locator(".try-it section.attributions")).to_be_visible()
    run.check(page, "model-try-it")
    for step, url in (
        ("annotators", reverse("leaderboards:annotators", args=[hate_task.slug])),
        ("round", reverse("cycle:round", args=[hate_task.slug, hate_round.number])),
        ("profile", reverse("accounts:me")),
        ("my-statistics", reverse("validation:me", args=[hate_task.slug])),
        ("outcome", reverse("annotation:outcome", args=[examples[0].pk])),
    ):
        page.goto(url)
        run.check(page, step)

    page = run.page_for(owner)
    for step, url in (
        ("review", reverse("validation:review", args=[hate_task.slug])),
        ("quality", reverse("validation:quality", args=[hate_task.slug, hate_round.number])),
        ("dashboard", reverse("cycle:dashboard", args=[hate_task.slug])),
    ):
        page.goto(url)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        run.check(page, step)

    page = run.page_for()
    page.goto(reverse("account_login"))
    run.check(page, "login")
    assert page.goto("/tasks/no-such-task/").status == 404
    run.check(page, "not-found")
    run.assert_clean()
