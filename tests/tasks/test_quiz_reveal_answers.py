"""The quiz keeps its answers while the worker may try again (issue 29): the task config's
``quiz.reveal_answers`` says when an attempt's result shows each question's verdict, right answer and
explanation: ``after_last_attempt`` (the default: after a pass or the last allowed attempt),
``always`` or ``never``. Otherwise the result shows the score only."""

from __future__ import annotations

import copy

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.config import TaskConfig, validate_config
from tests.factories.qualification import make_quiz

pytestmark = pytest.mark.django_db

QUIZ = reverse("tasks:quiz", args=["hate-speech"])


@pytest.fixture
def annotator_client(client, annotator, password):
    assert client.login(username=annotator.username, password=password)
    return client


def _set_reveal(task, value: str | None) -> None:
    config = copy.deepcopy(task.config)
    if value is None:
        config.pop("quiz", None)
    else:
        config["quiz"] = {"reveal_answers": value}
    validate_config(config)
    task.config = config
    task.save(update_fields=["config"])


def _post(client, quiz, letters: str):
    """Answer the quiz's questions in order with ``letters`` (the right answer is always "a")."""
    questions = list(quiz.questions.all())
    return client.post(QUIZ, {f"q{q.pk}": a for q, a in zip(questions, letters, strict=True)})


def _revealed(text: str) -> bool:
    """Whether the page shows any question's verdict, right answer or explanation (make_quiz's questions:
    the answer is "a", the explanation "Question <i>: a is right.")."""
    return any(
        marker in text
        for marker in ("<strong>wrong</strong>", "<strong>right</strong>", "Right answer:", ": a is right.")
    )


def test_by_default_a_failed_attempt_shows_only_the_score_until_the_last(annotator_client, hate_task):
    quiz = make_quiz(hate_task, n_questions=4, pass_mark=0.75, max_attempts=2)
    page = _post(annotator_client, quiz, "abbb")
    assert "You answered 1 of 4 questions right:" in page.text
    assert "you did not pass (75% right is needed)." in page.text
    assert not _revealed(page.text)
    assert "The right answers are not shown while you have attempts left." in page.text
    assert "(1 attempt left)" in page.text

    last = _post(annotator_client, quiz, "aabb")  # the last attempt, failed: now they are shown
    assert "You answered 2 of 4 questions right:" in last.text
    assert "You have no attempts left at this quiz" in last.text
    assert last.text.count("<strong>wrong</strong>") == 2 and last.text.count("<strong>right</strong>") == 2
    assert last.text.count("Right answer: a") == 2  # under each wrong answer
    assert "Question 3: a is right." in last.text


def test_by_default_unlimited_attempts_never_reveal_a_failure_but_a_pass_does(
    annotator_client, hate_task, annotator
):
    quiz = make_quiz(hate_task, n_questions=4, pass_mark=0.75)  # no limit: always another attempt
    for _ in range(3):
        page = _post(annotator_client, quiz, "bbbb")
        assert "You answered 0 of 4 questions right:" in page.text and not _revealed(page.text)
    passed = _post(annotator_client, quiz, "aaab")
    assert "you passed." in passed.text
    assert passed.text.count("<strong>right</strong>") == 3 and "Right answer: a" in passed.text
    assert hate_task.workers.get(user=annotator).quiz_passed_at is not None


def test_always_reveals_on_every_attempt(annotator_client, hate_task):
    _set_reveal(hate_task, "always")
    quiz = make_quiz(hate_task, n_questions=2, pass_mark=1.0, max_attempts=3)
    page = _post(annotator_client, quiz, "ab")
    assert "You answered 1 of 2 questions right:" in page.text
    assert page.text.count("<strong>wrong</strong>") == 1 and "Right answer: a" in page.text
    assert "Question 1: a is right." in page.text
    assert "not shown" not in page.text


def test_never_reveals_not_even_after_the_last_attempt_or_a_pass(
    client, annotator, validator, password, hate_task
):
    _set_reveal(hate_task, "never")
    quiz = make_quiz(hate_task, n_questions=2, pass_mark=1.0, max_attempts=1)
    client.login(username=annotator.username, password=password)
    last = _post(client, quiz, "ab")
    assert "You answered 1 of 2 questions right:" in last.text and not _revealed(last.text)
    assert "This quiz does not show its answers." in last.text
    client.login(username=validator.username, password=password)
    passed = _post(client, quiz, "aa")
    assert "you passed." in passed.text and not _revealed(passed.text)


def test_the_config_option_is_checked_and_defaults_to_after_last_attempt():
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    assert TaskConfig(config).quiz_reveal_answers == "after_last_attempt"
    for value in ("never", "after_last_attempt", "always"):
        config["quiz"] = {"reveal_answers": value}
        validate_config(config)
        assert TaskConfig(config).quiz_reveal_answers == value
    config["quiz"] = {"reveal_answers": "sometimes"}
    with pytest.raises(ValidationError, match=r"config\['quiz'\]\['reveal_answers'\]"):
        validate_config(config)
    config["quiz"] = {"reveal": "always"}
    with pytest.raises(ValidationError, match="Additional properties are not allowed"):
        validate_config(config)
