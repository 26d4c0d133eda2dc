"""The qualification rules on the pages: the create page redirects to the tutorial or quiz (with a safe
``next``) or shows the refusal instead of the form; the tutorial and quiz pages; the validate page; no
retraction in a competition round."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
from django.urls import reverse

from annotation.models import Example
from tasks import qualification
from tests.factories.annotation import make_example
from tests.factories.qualification import MESSAGES, TutorialItemFactory, make_quiz, refuse
from tests.factories.validation import serve

pytestmark = pytest.mark.django_db

CREATE = reverse("annotation:create", args=["hate-speech"])
TUTORIAL = reverse("tasks:tutorial", args=["hate-speech"])
QUIZ = reverse("tasks:quiz", args=["hate-speech"])
VALIDATE = reverse("validation:validate", args=["hate-speech"])


@pytest.fixture
def annotator_client(client, annotator, password):
    assert client.login(username=annotator.username, password=password)
    return client


def _post_example(client, statement="a new one"):
    return client.post(
        CREATE, {"statement": statement, "label": "hateful", "client_token": str(uuid.uuid4())}
    )


@pytest.mark.parametrize("code", ["blocked", "not_allowed", "held", "daily_cap", "competition_limit"])
def test_create_page_shows_the_refusal_instead_of_the_form(
    code, annotator_client, hate_task, hate_round, annotator
):
    refuse(code, hate_task, hate_round, annotator)
    page = annotator_client.get(CREATE)
    assert page.status_code == 200
    assert f'<p class="warning">{MESSAGES[code]}</p>'.replace("'", "&#x27;") in page.text
    assert 'name="statement"' not in page.text
    # A POST (a form left open) is refused by the service, the text kept, nothing stored.
    before = Example.objects.count()
    response = _post_example(annotator_client, "kept text 🌧")
    assert response.status_code == 200
    assert MESSAGES[code].replace("'", "&#x27;") in response.text
    assert "kept text 🌧" in response.text
    assert Example.objects.count() == before


@pytest.mark.parametrize(("code", "url"), [("tutorial", TUTORIAL), ("quiz", QUIZ)])
def test_create_page_sends_to_onboarding_with_next(
    code, url, annotator_client, hate_task, hate_round, annotator
):
    refuse(code, hate_task, hate_round, annotator)
    response = annotator_client.get(CREATE + "?tag=x")
    assert response.status_code == 302
    assert response["Location"] == f"{url}?next={quote(CREATE + '?tag=x', safe='')}"
    response = _post_example(annotator_client)
    assert MESSAGES[code].replace("'", "&#x27;") in response.text
    assert Example.objects.count() == 0


def test_tutorial_shows_the_worked_examples_and_start_writing_goes_to_next(
    annotator_client, hate_task, hate_round, annotator
):
    TutorialItemFactory(task=hate_task, text="Go back where you c0me from", note="Digits for letters.")
    TutorialItemFactory(task=hate_task, text="I love rainy days", label="not-hateful", fooled_model=False)
    page = annotator_client.get(f"{TUTORIAL}?next={quote(CREATE)}")
    text = page.text
    assert "Go back where you c0me from" in text and "Digits for letters." in text
    assert (
        "<dt>Fooled the model?</dt><dd>Yes</dd>" in text and "<dt>Fooled the model?</dt><dd>No</dd>" in text
    )
    assert "<dt>The model answered</dt><dd>not-hateful</dd>" in text
    assert f'<input type="hidden" name="next" value="{CREATE}">' in text

    response = annotator_client.post(TUTORIAL, {"next": CREATE + "?tag=x"})
    assert response.status_code == 302 and response["Location"] == CREATE + "?tag=x"
    assert hate_task.workers.get(user=annotator).tutorial_seen_at is not None
    assert annotator_client.get(CREATE).status_code == 200


@pytest.mark.parametrize(
    "evil", ["https://evil.example/steal", "//evil.example/", "javascript:alert(1)", "https:///evil.example"]
)
def test_an_external_next_is_ignored(evil, annotator_client, hate_task, hate_round):
    TutorialItemFactory(task=hate_task)
    response = annotator_client.post(TUTORIAL, {"next": evil})
    assert response.status_code == 302 and response["Location"] == CREATE
    page = annotator_client.get(TUTORIAL, {"next": evil})
    assert "evil" not in page.text and "javascript" not in page.text


def test_anonymous_visitors_are_sent_to_log_in(client, hate_task):
    for url in (TUTORIAL, QUIZ):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))


def test_quiz_page_shows_questions_as_radio_groups_without_the_answers(annotator_client, hate_task):
    quiz = make_quiz(hate_task, n_questions=4)
    page = annotator_client.get(QUIZ)
    text = page.text
    assert text.count("<fieldset") == 4 and text.count("<legend>") == 4
    assert text.count('type="radio"') == 12
    assert "1. Question 0: which is right?" in text
    assert "is right." not in text  # no explanation before the attempt
    assert "Answer 75% of the questions right to pass." in text
    assert quiz.attempts.count() == 0


def test_quiz_three_of_four_right_passes_two_fails(
    client, annotator, validator, password, hate_task, hate_round
):
    quiz = make_quiz(hate_task, n_questions=4, pass_mark=0.75)
    qs = list(quiz.questions.all())

    client.login(username=validator.username, password=password)
    two = {f"q{q.pk}": a for q, a in zip(qs, "aabb", strict=True)}
    page = client.post(QUIZ, {**two, "next": VALIDATE})
    assert "You answered 2 of 4 questions right:" in page.text
    assert "you did not pass (75% right is needed)." in page.text
    # No limit on attempts: a failed one never shows the answers (tests/tasks/test_quiz_reveal_answers.py).
    assert "Question 2: a is right." not in page.text and "<strong>wrong</strong>" not in page.text
    assert hate_task.workers.get(user=validator).quiz_passed_at is None

    client.login(username=annotator.username, password=password)
    three = {f"q{q.pk}": a for q, a in zip(qs, "abaa", strict=True)}
    page = client.post(QUIZ, {**three, "next": CREATE})
    assert "You answered 3 of 4 questions right:" in page.text and "you passed." in page.text
    assert "Question 2: a is right." in page.text  # explanations once passed
    assert page.text.count("<strong>wrong</strong>") == 1
    assert f'<a class="button" href="{CREATE}">Continue</a>' in page.text
    attempt = quiz.attempts.get(user=annotator)
    assert (attempt.n_correct, attempt.passed) == (3, True)
    assert hate_task.workers.get(user=annotator).quiz_passed_at is not None
    assert client.get(CREATE).status_code == 200


def test_quiz_with_a_missing_answer_shows_the_form_again(annotator_client, hate_task):
    quiz = make_quiz(hate_task, n_questions=2)
    first = quiz.questions.first()
    page = annotator_client.post(QUIZ, {f"q{first.pk}": "a"})
    assert "Choose an answer." in page.text
    assert quiz.attempts.count() == 0


def test_quiz_attempts_run_out(annotator_client, hate_task, annotator):
    quiz = make_quiz(hate_task, n_questions=2, max_attempts=1)
    wrong = {f"q{q.pk}": "b" for q in quiz.questions.all()}
    page = annotator_client.post(QUIZ, wrong)
    assert "You have no attempts left at this quiz" in page.text
    page = annotator_client.post(QUIZ, {f"q{q.pk}": "a" for q in quiz.questions.all()})
    assert "You have used all 1 attempt at this quiz without passing" in page.text
    assert quiz.attempts.count() == 1


def test_validate_page_sends_to_the_quiz_and_shows_other_refusals(
    client, validator, password, hate_task, hate_round, annotator
):
    make_example(hate_round, annotator)
    client.login(username=validator.username, password=password)
    make_quiz(hate_task)
    response = client.get(VALIDATE)
    assert response.status_code == 302
    assert response["Location"] == f"{QUIZ}?next={quote(VALIDATE + '?round=1', safe='')}"

    hate_task.quiz.delete()
    qualification.hold_for_review(task=hate_task, user=validator, reason="gold")
    response = client.get(VALIDATE, follow=True)
    assert response.redirect_chain[-1][0] == reverse("tasks:detail", args=["hate-speech"])
    assert MESSAGES["held"].replace("'", "&#x27;") in response.text


def test_no_retraction_in_a_competition_round(annotator_client, hate_task, hate_round, annotator):
    hate_round.is_competition = True
    hate_round.save(update_fields=["is_competition"])
    example = make_example(hate_round, annotator)
    response = annotator_client.post(reverse("annotation:retract", args=[example.pk]), follow=True)
    assert "Round 1 is a competition: examples written in it cannot be retracted." in response.text
    example.refresh_from_db()
    assert not example.is_retracted


def test_a_verdict_sent_at_the_cap_is_refused_and_said_once(
    client, validator, password, hate_task, hate_round, annotator
):
    first, second = make_example(hate_round, annotator), make_example(hate_round, annotator)
    first.validations.create(validator=validator, verdict="correct")
    serve(second, validator)  # served before the cap was reached; an unserved id would be a 404
    hate_task.daily_validation_cap = 1
    hate_task.save(update_fields=["daily_validation_cap"])
    client.login(username=validator.username, password=password)
    response = client.post(VALIDATE, {"example": second.pk, "verdict": "correct", "round": 1}, follow=True)
    message = "You have validated 1 example today, this task&#x27;s daily limit; you can validate again after 00:00 UTC."
    assert response.redirect_chain[-1][0] == reverse("tasks:detail", args=["hate-speech"])
    assert response.text.count(message) == 1
    assert second.validations.count() == 0
