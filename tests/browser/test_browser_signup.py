"""Sign up through allauth's page in a real browser, then land on the task list signed in."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from playwright.sync_api import expect


def test_sign_up_and_see_the_tasks(run, hate_round):
    page = run.page_for()
    page.goto("/")
    run.check(page, "task-list-anonymous")
    page.get_by_role("link", name="Sign up").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Sign Up")
    run.check(page, "signup-form")
    # allauth's labels end with a colon ("Password:"); the field names are stable
    page.get_by_label("Username").fill("newcomer")
    page.get_by_label("Email").fill("newcomer@example.org")
    page.locator("input[name=password1]").fill("a long enough passphrase 42")
    page.locator("input[name=password2]").fill("a long enough passphrase 42")
    page.get_by_role("button", name="Sign Up").click()
    expect(page.get_by_role("navigation", name="Site")).to_contain_text("newcomer")
    run.check(page, "signed-in")
    user = get_user_model().objects.get(username="newcomer")
    assert user.email == "newcomer@example.org" and user.has_usable_password()
    run.assert_clean()
