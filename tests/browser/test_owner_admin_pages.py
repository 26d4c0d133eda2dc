"""The owner's pages in a real browser: the admin index with the task's dashboard link, the dashboard, the
config editor's live syntax check, the owner picker's search, the start-round page with the candidates'
scores and the warning, and the train form's counts; each page audited with axe."""

from __future__ import annotations

from django.contrib.admin import helpers
from django.urls import reverse
from playwright.sync_api import expect

from cycle.models import TrainingJob
from leaderboards.models import Score
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.leaderboards import DatasetFactory


def test_owner_pages(run, rule_model, hate_task, hate_round, owner, annotator):
    make_example(hate_round, annotator, model_wrong=True)  # waiting for validation
    make_example(hate_round, annotator, model_wrong=True, status="validated_correct")
    make_example(hate_round, annotator, model_wrong=False, label="not-hateful")
    TrainingJob.objects.create(task=hate_task, rounds=[1], status="running", progress="epoch 1/3: loss 0.52")
    Score.objects.filter(model=rule_model).delete()
    Score.objects.create(
        model=rule_model, dataset=DatasetFactory(task=hate_task, slug="hatecheck", name="HateCheck"),
        status="done", perf=0.625,
    )  # fmt: skip
    UserFactory(username="owen-staff", is_staff=True)
    page = run.page_for(owner)

    page.goto(reverse("admin:index"))
    expect(page.locator("#task-dashboards")).to_contain_text("Hate speech")
    expect(page.locator("#nav-sidebar, #content-main")).not_to_contain_text("Django Q")
    run.check(page, "admin-index")
    page.locator("#task-dashboards").get_by_role("link", name="Hate speech: dashboard").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Dashboard: Hate speech")
    row = page.locator('tr[data-round="1"]')
    expect(row.locator("td.mer")).to_have_text("66.7%")
    expect(row.locator("td.waiting")).to_have_text("1")
    expect(page.locator(".dashboard-jobs")).to_contain_text("epoch 1/3: loss 0.52")
    run.check(page, "dashboard")

    page.goto(reverse("admin:tasks_task_change", args=[hate_task.pk]))
    box = page.locator("textarea#id_config")
    expect(page.locator("#id_config-syntax")).to_contain_text("JSON syntax OK")
    box.fill(box.input_value().replace("{", "{ oops", 1))
    expect(page.locator("#id_config-syntax")).to_contain_text("Not valid JSON")
    page.locator(".field-owners .select2-selection").click()
    page.keyboard.type("owe")
    expect(page.locator(".select2-results")).to_contain_text("owen-staff")
    run.check(page, "task-change-picker")
    page.keyboard.press("Escape")

    page.goto(reverse("admin:tasks_task_start_round", args=[hate_task.pk]))
    expect(page.locator("#waiting-warning")).to_contain_text("1 example waiting for validation")
    candidate = page.locator(f'tr[data-model="{rule_model.pk}"]')
    expect(candidate).to_contain_text("HateCheck: 0.625")
    expect(candidate).to_contain_text("current target of round 1")
    run.check(page, "start-round")

    page.goto(reverse("admin:tasks_task_changelist"))
    page.locator(f'input[name="{helpers.ACTION_CHECKBOX_NAME}"][value="{hate_task.pk}"]').check()
    page.locator("select[name=action]").select_option("train_next_round_target")
    page.locator("button[name=index]").click()
    expect(page.locator('#settled-per-round tr[data-round="1"] td.total')).to_have_text("1")
    run.check(page, "train-form")
    run.assert_clean()


def test_owner_adds_a_co_owner_without_javascript(run, hate_task, hate_round, owner):
    UserFactory(username="owen-staff", is_staff=True)
    page = run.page_for(owner, javascript=False)
    page.goto(reverse("admin:tasks_task_change", args=[hate_task.pk]))
    expect(page.locator("textarea#id_config")).to_have_class("json-editor")
    page.get_by_label("Add owners by username").fill("owen-staff")
    page.locator("input[name=_continue]").click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    run.check(page, "co-owner-added", axe=False)
    assert sorted(hate_task.owners.values_list("username", flat=True)) == ["owen-staff", "owner"]
    run.assert_clean()
