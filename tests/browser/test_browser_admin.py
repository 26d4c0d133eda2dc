"""The owner's start-round flow in the admin: log in, open the task, "Start the next round", pick the target."""

from __future__ import annotations

import re

from django.urls import reverse
from playwright.sync_api import expect

from tasks.models import Task


def test_owner_starts_the_next_round_in_the_admin(run, rule_model, hate_task, hate_round, owner, password):
    page = run.page_for()
    page.goto(reverse("admin:index"))
    run.check(page, "admin-login")
    page.get_by_label("Username").fill(owner.username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    run.check(page, "admin-index")

    page.goto(reverse("admin:tasks_task_change", args=[hate_task.pk]))
    run.check(page, "task-change")
    page.get_by_role("link", name="Start the next round").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Start round 2")
    run.check(page, "start-round")
    page.get_by_label("Description").fill("Round 2: harder statements")
    page.get_by_role("checkbox", name=re.compile(rule_model.name)).check()
    page.get_by_role("button", name="Start round 2").click()
    expect(page.locator(".messagelist")).to_contain_text("Round 2 started and is now the current round")
    run.check(page, "round-started")

    task = Task.objects.get(pk=hate_task.pk)
    assert task.current_round.number == 2
    assert task.current_round.description == "Round 2: harder statements"
    assert list(task.current_round.targets.values_list("model__name", flat=True)) == [rule_model.name]
    hate_round.refresh_from_db()
    assert hate_round.is_closed
    run.assert_clean()
