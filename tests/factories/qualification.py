"""Qualification rows: tutorial items, quizzes with questions, standings (``TaskWorker``).

``make_quiz`` builds a quiz whose question ``i`` has the choices ``["a", "b", "c"]`` and the answer
``"a"``, so a test can write right and wrong answers by hand. ``refuse(code, ...)`` sets up one rule
of ``tasks.qualification.CODES`` against a user; ``MESSAGES`` and ``URLS`` are what it must answer.
"""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from tests.factories.annotation import make_example


class TutorialItemFactory(DjangoModelFactory):
    """A worked example of ``task`` (required): it fooled the model, with a note."""

    class Meta:
        model = "tasks.TutorialItem"

    task = None
    position = factory.Sequence(lambda n: n)
    text = factory.Sequence(lambda n: f"worked example number {n} 🌈")
    label = "hateful"
    model_answer = "not-hateful"
    fooled_model = True
    note = "The model missed the slur spelt with a digit."


def make_quiz(task, *, n_questions: int = 4, pass_mark: float = 0.75, max_attempts=None, is_active=True):
    """An active quiz of ``task`` with ``n_questions`` questions; each one's answer is ``"a"`` of
    ``["a", "b", "c"]`` and its explanation "Question <i>: a is right."."""
    from tasks.models import Quiz, QuizQuestion

    quiz = Quiz.objects.create(task=task, pass_mark=pass_mark, max_attempts=max_attempts, is_active=is_active)
    for i in range(n_questions):
        QuizQuestion.objects.create(
            quiz=quiz,
            position=i,
            text=f"Question {i}: which is right?",
            choices=["a", "b", "c"],
            answer="a",
            explanation=f"Question {i}: a is right.",
        )
    return quiz


def answers(quiz, n_right: int) -> dict[str, str]:
    """Answers to ``quiz``: the first ``n_right`` questions right ("a"), the others wrong ("b")."""
    return {str(q.pk): ("a" if i < n_right else "b") for i, q in enumerate(quiz.questions.all())}


def standing(task, user, **fields):
    """``user``'s ``TaskWorker`` row on ``task`` with ``fields`` set (created if missing)."""
    from tasks.models import TaskWorker

    worker, _ = TaskWorker.objects.update_or_create(task=task, user=user, defaults=fields)
    return worker


MESSAGES = {
    "blocked": "You are on this task's block list: you cannot write or validate examples here.",
    "not_allowed": (
        "This task is open only to the workers on its allow list, and you are not on it; ask the task's "
        "owners to add you."
    ),
    "held": (
        "An owner is reviewing your work on this task; you cannot write or validate here until they "
        "release the hold."
    ),
    "tutorial": "Read this task's tutorial before you write your first example.",
    "quiz": "Pass this task's qualification quiz before you write or validate examples.",
    "daily_cap": (
        "You have written 1 example today, this task's daily limit; you can write again after 00:00 UTC."
    ),
    "competition_limit": (
        "Round 1 is a competition: each participant writes 1 example, and you have written 1. Thank you "
        "for taking part."
    ),
}
URLS = {"tutorial": "/tasks/hate-speech/tutorial/", "quiz": "/tasks/hate-speech/quiz/"}


def refuse(code: str, task, round_, user) -> None:
    """Make ``task``'s rule ``code`` refuse ``user`` writing (and nothing else)."""
    if code == "blocked":
        standing(task, user, listing="blocked")
    elif code == "not_allowed":
        task.requires_allow_list = True
        task.save(update_fields=["requires_allow_list"])
    elif code == "held":
        from tasks.qualification import hold_for_review

        hold_for_review(task=task, user=user, reason="gold accuracy 0.4")
    elif code == "tutorial":
        TutorialItemFactory(task=task)
    elif code == "quiz":
        make_quiz(task)
    elif code == "daily_cap":
        task.daily_example_cap = 1
        task.save(update_fields=["daily_example_cap"])
        make_example(round_, user)
    elif code == "competition_limit":
        round_.is_competition = True
        round_.examples_per_participant = 1
        round_.save(update_fields=["is_competition", "examples_per_participant"])
        make_example(round_, user)
