"""/tasks/<slug>/validate/: a validator validates end to end; three accounts settle an example."""

from __future__ import annotations

from django.urls import reverse

from annotation.models import Example
from tasks.services import ensure_round
from tests.factories.annotation import make_example
from validation.models import Validation
from validation.services import submit_validation

URL = reverse("validation:validate", args=["hate-speech"])


def _login(client, user, password):
    assert client.login(username=user.username, password=password)


def test_validator_validates_end_to_end(client, validator, password, fooling):
    _login(client, validator, password)
    page = client.get(URL)
    assert page.status_code == 200
    text = page.text
    assert '<p class="statement" dir="auto">they should go back home</p>' in text
    assert '<strong dir="auto">hateful</strong>' in text  # intended label
    assert '<strong dir="auto">not-hateful</strong>' in text  # the model's answer
    assert f'name="example" value="{fooling.pk}"' in text

    response = client.post(
        URL, {"example": fooling.pk, "verdict": "correct", "round": 1, "reason": "clearly"}
    )
    assert response.status_code == 302 and response["Location"] == f"{URL}?round=1"
    v = Validation.objects.get()
    assert (v.example, v.validator, v.verdict, v.reason) == (fooling, validator, "correct", "clearly")

    after = client.get(response["Location"])
    assert "Verdict recorded." in after.text
    assert "Nothing left to validate in round 1" in after.text
    assert "already validated by you: 1" in after.text


def test_double_submit_is_recorded_once(client, validator, password, fooling):
    _login(client, validator, password)
    client.get(URL)
    data = {"example": fooling.pk, "verdict": "incorrect", "corrected_label": "not-hateful", "round": 1}
    client.post(URL, data)
    second = client.post(URL, data, follow=True)
    assert second.status_code == 200
    assert f"Your verdict on example {fooling.pk} was already recorded." in second.text
    assert Validation.objects.count() == 1


def test_three_accounts_validate_until_it_settles(client, validator, outsider, make_user, password, fooling):
    third = make_user("third")
    for n, user in enumerate((validator, outsider, third), start=1):
        _login(client, user, password)
        assert f'name="example" value="{fooling.pk}"' in client.get(URL).text
        page = client.post(URL, {"example": fooling.pk, "verdict": "correct", "round": 1}, follow=True)
        fooling.refresh_from_db()
        assert fooling.status == ("validated_correct" if n == 3 else "pending")
        client.logout()
    assert f"Example {fooling.pk} is now settled." in page.text
    assert "Every example of round 1 that needs validation has been settled." in page.text

    # Someone never served it and not among its voters may not see it: a 404, as for no such example.
    late = make_user("late")
    _login(client, late, password)
    assert "Nothing left to validate in round 1" in client.get(URL).text
    page = client.post(URL, {"example": fooling.pk, "verdict": "incorrect", "round": 1})
    assert page.status_code == 404
    assert Validation.objects.count() == 3


def test_a_validator_served_an_example_is_told_it_was_settled_meanwhile(
    client, validator, owner, password, fooling
):
    _login(client, validator, password)
    assert f'name="example" value="{fooling.pk}"' in client.get(URL).text  # served and claimed
    # While their claim is live nobody else is served it, so only an owner verdict can settle it meanwhile.
    submit_validation(example=fooling, validator=owner, verdict="correct", owner_mode=True)
    fooling.refresh_from_db()
    assert fooling.status == "validated_correct"
    page = client.post(URL, {"example": fooling.pk, "verdict": "incorrect", "round": 1}, follow=True)
    assert page.status_code == 200
    assert f"Example {fooling.pk} was settled before your verdict; nothing was recorded." in page.text
    assert not Validation.objects.filter(validator=validator).exists()


def test_author_is_told_why_there_is_nothing(client, annotator, password, fooling):
    _login(client, annotator, password)
    text = client.get(URL).text
    assert "Nothing left to validate in round 1" in text
    assert "written by you: 1" in text
    page = client.post(URL, {"example": fooling.pk, "verdict": "correct", "round": 1}, follow=True)
    assert "You cannot validate your own example." in page.text
    assert not Validation.objects.exists()


def test_someone_elses_claim_is_reported(client, validator, outsider, password, fooling):
    _login(client, validator, password)
    client.get(URL)
    client.logout()
    _login(client, outsider, password)
    assert "being validated by someone else right now: 1" in client.get(URL).text


def test_invalid_corrected_label_shows_the_same_example_again(client, validator, password, fooling):
    _login(client, validator, password)
    client.get(URL)
    page = client.post(
        URL,
        {"example": fooling.pk, "verdict": "correct", "corrected_label": "not-hateful", "round": 1},
        follow=True,
    )
    assert "Only an &#x27;incorrect&#x27; verdict takes a corrected label." in page.text
    assert f'name="example" value="{fooling.pk}"' in page.text
    assert not Validation.objects.exists()


def test_round_parameter(client, hate_task, hate_round, annotator, validator, password):
    round2 = ensure_round(task=hate_task, number=2)
    example = make_example(round2, annotator, inputs={"statement": "שלום 👋🏽 round two"})
    _login(client, validator, password)
    assert "Nothing left to validate in round 1" in client.get(URL).text
    page = client.get(f"{URL}?round=2")
    assert f'name="example" value="{example.pk}"' in page.text
    assert '<p class="statement" dir="auto">שלום 👋🏽 round two</p>' in page.text
    assert client.get(f"{URL}?round=9").status_code == 404
    assert client.get(f"{URL}?round=x").status_code == 404


def test_empty_page_lists_the_other_rounds_without_a_stray_separator(
    client, hate_task, hate_round, validator, password
):
    ensure_round(task=hate_task, number=2)
    round3 = ensure_round(task=hate_task, number=3)
    _login(client, validator, password)
    page = client.get(f"{URL}?round={round3.number}").text
    [line] = [line for line in page.splitlines() if "Other rounds:" in line]
    links = f'<a href="{URL}?round=1">round 1</a> · <a href="{URL}?round=2">round 2</a></p>'
    assert line.endswith(links), line


def test_example_of_another_task_is_404(client, validator, password, fooling):
    _login(client, validator, password)
    other = reverse("validation:validate", args=["no-such-task"])
    assert client.get(other).status_code == 404
    response = client.post(URL, {"example": fooling.pk + 1000, "verdict": "correct", "round": 1})
    assert response.status_code == 404


def test_blocked_user_is_sent_back(client, outsider, password, fooling):
    outsider.is_blocked = True
    outsider.save()
    _login(client, outsider, password)
    page = client.get(URL, follow=True)
    assert "Your account cannot validate examples." in page.text
    assert Example.objects.get().status == "pending"


def test_anonymous_is_sent_to_login(client, fooling):
    response = client.get(URL)
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))


def test_task_page_links_to_validate(client, validator, password, hate_round):
    _login(client, validator, password)
    assert URL in client.get(reverse("tasks:detail", args=["hate-speech"])).text


def test_a_different_verdict_from_a_second_tab_is_said_not_to_be_recorded(
    client, validator, password, fooling
):
    _login(client, validator, password)
    client.get(URL)
    client.post(URL, {"example": fooling.pk, "verdict": "correct", "round": 1})
    second = client.post(
        URL,
        {"example": fooling.pk, "verdict": "incorrect", "corrected_label": "not-hateful", "round": 1},
        follow=True,
    )
    assert (
        f"You already gave example {fooling.pk} the verdict “correct”; your second verdict “incorrect” "
        "was not recorded." in second.text
    )
    assert "was already recorded" not in second.text
    assert list(Validation.objects.values_list("verdict", flat=True)) == ["correct"]


def test_an_empty_queue_says_whether_anything_was_written_or_needs_validation(
    client, hate_round, annotator, validator, password
):
    # Round 1 has nothing yet; then only two examples that did not fool the model (this task validates
    # only those that did); the page said "every example ... has been settled" for both.
    _login(client, validator, password)
    assert "Nobody has written an example in round 1 yet." in client.get(URL).text
    make_example(hate_round, annotator, model_wrong=False)
    make_example(hate_round, annotator, model_wrong=False)
    page = client.get(URL).text
    assert (
        "None of round 1's 2 pending examples is open for validation: this task validates only the "
        "examples that fooled the model." in page
    )
    assert "has been settled" not in page
