"""The validate page at speed (issue 14): the task's warning and instructions, the model's answer on
request, distinct verdict buttons with keyboard hints, progress, and an empty queue kept empty by
others' claims (page and API)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.staticfiles import finders
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from tasks.config import TaskConfig, validate_config
from tests.factories.annotation import make_example
from tests.factories.validation import submit_served
from validation import selectors
from validation.models import ValidationClaim

URL = reverse("validation:validate", args=["hate-speech"])
NEXT = "/api/tasks/hate-speech/validations/next/"

MODEL_ANSWER = '<details class="model-answer"><summary>Show the model\'s answer</summary>'


@pytest.fixture
def frozen_now(monkeypatch):
    """``timezone.now`` fixed at the real time of the test's start, so claim expiries are exact."""
    now = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: now)
    return now


def _page(client, user, password, url=URL) -> str:
    assert client.login(username=user.username, password=password)
    response = client.get(url)
    assert response.status_code == 200
    return response.text


# --- 1. content warning and instructions -----------------------------------------------------------------


def test_content_warning_and_instructions_are_on_the_page(client, hate_task, validator, password, fooling):
    hate_task.config = {**hate_task.config, "content_warning": "Offensive <language> ahead."}
    hate_task.instructions = "Read the statement.\n\nJudge the label."
    hate_task.save()
    text = _page(client, validator, password)
    assert (
        '<p class="warning"><strong>Content warning.</strong> Offensive &lt;language&gt; ahead.</p>\n'
        "<h1>Is the intended label right?</h1>"
    ) in text
    assert (
        '<details class="instructions"><summary>Instructions</summary><p>Read the statement.</p>\n\n'
        "<p>Judge the label.</p></details>"
    ) in text
    # The instructions are folded above the example, not open in front of it.
    assert text.index('class="instructions"') < text.index("they should go back home")
    assert '<details class="instructions" open' not in text


def test_no_warning_and_no_instructions_leave_nothing_behind(client, hate_task, validator, password, fooling):
    hate_task.config = {k: v for k, v in hate_task.config.items() if k != "content_warning"}
    hate_task.instructions = ""
    hate_task.save()
    text = _page(client, validator, password)
    assert "Content warning." not in text
    assert 'class="instructions"' not in text


# --- 2. the model's answer on request --------------------------------------------------------------------


def test_the_models_answer_is_behind_a_details_and_the_intended_label_is_not(
    client, validator, password, fooling
):
    text = _page(client, validator, password)
    assert text.count(MODEL_ANSWER) == 1
    start = text.index(MODEL_ANSWER)
    end = text.index("</details>", start)
    folded = text[start:end]
    assert '<strong dir="auto">not-hateful</strong> (differs from the intended label)' in folded
    assert "<th>Probabilities</th>" in folded
    intended = 'The author\'s intended label: <strong dir="auto">hateful</strong>'
    assert intended in text and text.index(intended) < start


def test_the_task_config_can_show_the_models_answer_at_once(client, hate_task, validator, password, fooling):
    hate_task.config = {**hate_task.config, "validation_shows_model_answer": True}
    hate_task.save()
    text = _page(client, validator, password)
    assert "model-answer" not in text and "Show the model" not in text
    assert '<strong dir="auto">not-hateful</strong> (differs from the intended label)' in text


def test_the_review_page_shows_owners_the_models_answer_unfolded(client, owner, password, fooling):
    text = _page(client, owner, password, reverse("validation:review", args=["hate-speech"]) + "?show=all")
    assert '<strong dir="auto">not-hateful</strong>' in text
    assert "model-answer" not in text


def test_validation_shows_model_answer_config_key(hate_task):
    assert TaskConfig(hate_task.config).validation_shows_model_answer is False
    assert TaskConfig(
        {**hate_task.config, "validation_shows_model_answer": True}
    ).validation_shows_model_answer
    validate_config({**hate_task.config, "validation_shows_model_answer": False})
    with pytest.raises(ValidationError) as caught:
        validate_config({**hate_task.config, "validation_shows_model_answer": "yes"})
    assert "validation_shows_model_answer" in str(caught.value)


# --- 3. buttons, shortcuts, corrected label, progress ----------------------------------------------------


def test_distinct_buttons_with_keyboard_hints_and_the_label_after_them(client, validator, password, fooling):
    text = _page(client, validator, password)
    buttons = (
        '  <div class="verdict-buttons verdict-bar">\n'
        '  <button type="submit" name="verdict" value="correct" class="verdict-correct" data-key="1">'
        "Correct <kbd>1</kbd></button>\n"
        '  <button type="submit" name="verdict" value="incorrect" class="verdict-incorrect" data-key="2">'
        "Incorrect <kbd>2</kbd></button>\n"
        '  <button type="submit" name="verdict" value="flagged" class="verdict-flag" data-key="3">'
        "Flag <kbd>3</kbd></button>\n"
        "  </div>\n"
        '  <div class="field corrected-label"><label for="id_corrected_label">Corrected label (optional)</label>'
    )
    assert buttons in text
    # The script comes from the site's static files (the CSP allows no inline script), after the form.
    assert '<script src="/static/validation/verdict_keys.js" defer></script>' in text
    assert text.index("</form>") < text.index("verdict_keys.js")
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", text) == []  # no inline script
    assert finders.find("validation/verdict_keys.js") is not None


def test_review_page_buttons_have_the_colours_but_no_shortcuts(client, owner, password, fooling):
    text = _page(client, owner, password, reverse("validation:review", args=["hate-speech"]) + "?show=all")
    assert (
        '<button type="submit" name="verdict" value="incorrect" class="verdict-incorrect">'
        "Settle: Incorrect</button>"
    ) in text
    assert "<kbd>" not in text and "data-key" not in text and "verdict_keys.js" not in text


def test_the_stylesheet_tells_the_buttons_apart():
    css = open(finders.find("dynabench/site.css"), encoding="utf-8").read()
    assert "form.verdict button.verdict-correct { background: #1e7b34; }" in css
    assert "form.verdict button.verdict-incorrect { background: #b00020; }" in css
    assert (
        "form.verdict button.verdict-flag { background: #fff; color: #20354f; border: 2px solid #20354f; }"
        in css
    )


def test_progress_counts_this_round(client, hate_round, annotator, validator, outsider, password):
    examples = [make_example(hate_round, annotator) for _ in range(3)]
    submit_served(example=examples[0], validator=outsider, verdict="correct")  # not the validator's
    text = _page(client, validator, password)
    assert '<p class="progress">You have validated 0 examples of this round · 3 waiting</p>' in text
    served = next(e for e in examples if f'name="example" value="{e.pk}"' in text)
    client.post(URL, {"example": served.pk, "verdict": "correct", "round": 1})
    text = client.get(URL).text
    assert '<p class="progress">You have validated 1 example of this round · 2 waiting</p>' in text


# --- 4. an empty queue kept empty by others' claims ------------------------------------------------------


def _claim_by(client, user, password, example, expires_at):
    """``user`` is served ``example`` (its only one); the claim then runs out at ``expires_at``."""
    assert f'name="example" value="{example.pk}"' in _page(client, user, password)
    client.logout()
    ValidationClaim.objects.filter(example=example, validator=user).update(expires_at=expires_at)


def test_empty_page_says_everything_is_claimed_and_when_to_come_back(
    client, hate_round, annotator, validator, outsider, password, frozen_now
):
    example = make_example(hate_round, annotator)
    _claim_by(client, validator, password, example, frozen_now + timedelta(seconds=450, milliseconds=500))
    text = _page(client, outsider, password)
    assert "<h1>Every open example is being validated by someone else right now</h1>" in text
    assert (
        '<p class="come-back">Come back in about 8 minutes, when the first of those reservations runs out.</p>'
    ) in text
    assert "Nothing left to validate" not in text
    assert "being validated by someone else right now: 1</li>" in text


def test_with_own_examples_too_the_heading_says_every_one_you_can_validate(
    client, hate_round, annotator, validator, outsider, password, frozen_now
):
    example = make_example(hate_round, annotator)
    _claim_by(client, validator, password, example, frozen_now + timedelta(seconds=30))
    make_example(hate_round, outsider)  # outsider's own, made after validator's claim
    text = _page(client, outsider, password)
    assert "<h1>Every open example you can validate is being validated by someone else right now</h1>" in text
    assert "Come back in about 1 minute, when" in text


def test_own_examples_only_is_still_nothing_left(client, annotator, password, hate_round):
    make_example(hate_round, annotator)
    text = _page(client, annotator, password)
    assert "<h1>Nothing left to validate in round 1</h1>" in text
    assert "come-back" not in text


def test_api_empty_answer_has_the_hint_and_retry_after(
    api, client, hate_round, annotator, validator, outsider, password, frozen_now
):
    example = make_example(hate_round, annotator)
    _claim_by(client, validator, password, example, frozen_now + timedelta(seconds=450, milliseconds=500))
    response = api(outsider).get(NEXT)
    assert response.status_code == 200
    assert response["Retry-After"] == "451"
    assert response.json() == {
        "round": 1,
        "example": None,
        "claim_expires_at": None,
        "queue": {
            "open": 1,
            "own": 0,
            "judged": 0,
            "claimed": 1,
            "written": 1,
            "pending": 1,
            "reason": "unavailable",
        },
        "hint": "Every open example is being validated by someone else right now; come back in about 8 minutes.",
        "model_answer_hidden": False,
    }
    own = api(annotator).get(NEXT)
    assert own.json()["hint"] is None and "Retry-After" not in own
    served = api(validator).get(NEXT)
    assert served.json()["hint"] is None and "Retry-After" not in served


def test_expired_claims_do_not_count(hate_round, annotator, validator, outsider, frozen_now):
    example = make_example(hate_round, annotator)
    ValidationClaim.objects.create(example=example, validator=validator, expires_at=frozen_now)
    summary = selectors.queue_summary(hate_round, outsider)
    assert summary.claimed == 0
    assert selectors.claim_wait(hate_round, outsider, summary) is None
    assert selectors.earliest_claim_expiry(hate_round, outsider) is None
    ValidationClaim.objects.filter(example=example).update(expires_at=frozen_now + timedelta(seconds=61))
    wait = selectors.claim_wait(hate_round, outsider, selectors.queue_summary(hate_round, outsider))
    assert (wait.seconds, wait.minutes, wait.everything) == (61, 2, True)
