"""Who may write and validate on a task: block and allow lists, holds for review, onboarding (tutorial
and quiz), daily caps and competition limits (docs/crowd.md, "Qualification"). The services of
annotation and validation call ``check_can_contribute`` before every write, so pages and API obey the
same rules; the writes of this module (listing, holds, tutorial seen, quiz attempts) are below it.

Examples and validations are tables of apps above this one: they are counted through the reverse
relations ``User.examples`` and ``User.validations`` (as ``tasks/round_stats.py`` counts
``Round.examples``), never by an import.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol
from urllib.parse import urlencode

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.urls import reverse
from django.utils import timezone

from core import audit

from .config import QUIZ_REVEAL_AFTER_LAST_ATTEMPT, QUIZ_REVEAL_ALWAYS, QUIZ_REVEAL_CHOICES
from .models import Quiz, QuizAttempt, QuizQuestion, Task, TaskWorker, TutorialItem

WRITE = "write"
VALIDATE = "validate"
ACTIONS = (WRITE, VALIDATE)

# Every refusal code, in the order check_can_contribute tries them.
CODES = ("blocked", "not_allowed", "held", "tutorial", "quiz", "daily_cap", "competition_limit")


class ContributionRule(Protocol):
    """A rule an app above adds to ``check_can_contribute``: called with the task, the user, the action
    (``WRITE`` or ``VALIDATE``), ``lock`` and ``now``; refuses by raising ``NotQualified`` with a code of
    its own; with ``lock`` it may lock its rows (the caller's transaction stores the work)."""

    def __call__(self, *, task: Task, user, action: str, lock: bool, now) -> object: ...


_EXTRA_RULES: list[tuple[str, ContributionRule]] = []


def add_contribution_rule(name: str, rule: ContributionRule) -> None:
    """Add ``rule`` (named ``name``) to the rules ``check_can_contribute`` tries before the task's own, after
    those added before it; an app adds its rules when it starts (crowd: ``study``, a crowd account works
    only inside a running study). Adding a name again replaces that rule in its place."""
    for i, (known, _) in enumerate(_EXTRA_RULES):
        if known == name:
            _EXTRA_RULES[i] = (name, rule)
            return
    _EXTRA_RULES.append((name, rule))


def contribution_rules() -> list[str]:
    """The names of the rules ``check_can_contribute`` tries, in order: the apps' rules
    (``add_contribution_rule``), then the task's own (``CODES``)."""
    return [name for name, _ in _EXTRA_RULES] + list(CODES)


class NotQualified(Exception):
    """The task's rules refuse this worker: ``code`` (one of ``CODES``, or the code of a rule an app above
    adds through ``add_contribution_rule``: crowd's ``study``), ``message`` (a sentence for the
    worker) and ``url`` (the page that lifts it, the tutorial or quiz, else None). The API answers it
    with 403 ``{"detail": message, "code": code, "url": url}`` (``tasks.api.NotQualifiedError``); pages
    show the message, or redirect to ``url``."""

    def __init__(self, code: str, message: str, url: str | None = None):
        self.code = code
        self.message = message
        self.url = url
        super().__init__(message)


class QuizError(Exception):
    """A quiz attempt that cannot be recorded: no active quiz, already passed, no attempts left."""


def standing_of(task: Task, user) -> TaskWorker:
    """The user's ``TaskWorker`` row on ``task``, created (unsaved fields at their defaults) if missing."""
    worker, _ = TaskWorker.objects.get_or_create(task=task, user=user)
    return worker


def hold_for_review(*, task: Task, user, reason: str, now=None) -> bool:
    """Hold ``user`` for review on ``task``: they may not write or validate there until an owner releases
    them. Returns True if this call placed the hold, False if they were already held (the first reason
    stays)."""
    worker = standing_of(task, user)
    held_at = now or timezone.now()
    placed = TaskWorker.objects.filter(task=task, user=user, held_at__isnull=True).update(
        held_at=held_at, held_reason=reason
    )
    if placed:  # a conditional update sends no model signal: the audit entry is written here
        audit.record_change(
            worker,
            changes={"held_at": (None, held_at.isoformat()), "held_reason": ("", reason)},
            task_id=task.pk,
        )
    return bool(placed)


def release_hold(*, task: Task, user) -> bool:
    """Lift ``user``'s hold on ``task``; True if they were held."""
    held = TaskWorker.objects.filter(task=task, user=user, held_at__isnull=False)
    worker = held.first()
    released = held.update(held_at=None, held_reason="", updated_at=timezone.now())
    if released and worker is not None:  # no model signal either: logged here (core/audit.py)
        audit.record_change(
            worker,
            changes={"held_at": (worker.held_at.isoformat(), None), "held_reason": (worker.held_reason, "")},
            task_id=task.pk,
        )
    return bool(released)


def set_listing(*, task: Task, user, listing: str, reason: str = "") -> TaskWorker:
    """Put ``user`` on the task's allow list (``"allowed"``), block list (``"blocked"``) or neither
    (``""``), with ``reason`` (kept for the owners; cleared with the listing).

    Raises:
        ValueError: an unknown listing.
    """
    if listing not in TaskWorker.Listing.values:
        raise ValueError(f"{listing!r} is not a listing")
    worker = standing_of(task, user)
    worker.listing = listing
    worker.listing_reason = reason if listing else ""
    worker.save(update_fields=["listing", "listing_reason", "updated_at"])
    return worker


# --- the rule ---------------------------------------------------------------------------------------------


def utc_day(now: datetime) -> tuple[datetime, datetime]:
    """The UTC day that contains ``now``: ``(00:00 UTC, 00:00 UTC of the next day)``."""
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def active_quiz(task: Task) -> Quiz | None:
    """The task's quiz if it is active and has at least one question (a quiz without questions cannot
    be passed, so it asks nothing of anyone); else None."""
    quiz = Quiz.objects.filter(task=task, is_active=True).first()
    if quiz is None or not quiz.questions.exists():
        return None
    return quiz


def attempts_left(quiz: Quiz, user) -> int | None:
    """Attempts ``user`` still has at ``quiz``; None when the quiz has no limit."""
    if quiz.max_attempts is None:
        return None
    return max(0, quiz.max_attempts - quiz.attempts.filter(user=user).count())


def examples_written_today(task: Task, user, now: datetime) -> int:
    """Examples ``user`` wrote in ``task`` on the UTC day of ``now``, retracted ones included (retracting
    gives no example back); imported ones are not their writing and are left out."""
    start, end = utc_day(now)
    return (
        user.examples.filter(round__task=task, created_at__gte=start, created_at__lt=end)
        .exclude(source="imported")
        .count()
    )


def validations_cast_today(task: Task, user, now: datetime) -> int:
    """Verdicts ``user`` cast on ``task``'s examples on the UTC day of ``now``: ordinary votes and gold
    answers alike (a gold item looks like any other example to the validator, so it counts the same;
    both tables sit above this app and are read through ``User.validations`` and ``User.gold_answers``)."""
    start, end = utc_day(now)
    votes = user.validations.filter(
        example__round__task=task, is_owner_verdict=False, created_at__gte=start, created_at__lt=end
    ).count()
    gold = user.gold_answers.filter(gold__task=task, created_at__gte=start, created_at__lt=end).count()
    return votes + gold


def examples_in_round(round_, user) -> int:
    """Examples ``user`` wrote in ``round_`` (imported ones left out), for the competition limit."""
    return user.examples.filter(round=round_).exclude(source="imported").count()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class TaskFacts:
    """What the rules need to know of the task itself for one user, read in one query (``task_facts``).

    They change only when an owner edits the task (its owners, tutorial or quiz), so a caller that checks
    twice for one write (before the model runs, then under the row lock) reads them once and passes
    them to both checks; what the lock protects (the worker's row, the day's counts) is read each time.
    """

    is_owner: bool
    has_tutorial: bool
    has_quiz: bool  # an active quiz with at least one question (``active_quiz``)


def task_facts(task: Task, user) -> TaskFacts:
    """``user``'s facts about ``task`` (owner or superuser, a tutorial, an active quiz with questions), in
    one query instead of one per fact."""
    row = (
        Task.objects.filter(pk=task.pk)
        .annotate(
            fact_owned=Exists(Task.owners.through.objects.filter(task_id=OuterRef("pk"), user_id=user.pk)),
            fact_tutorial=Exists(TutorialItem.objects.filter(task_id=OuterRef("pk"))),
            fact_quiz=Exists(QuizQuestion.objects.filter(quiz__task_id=OuterRef("pk"), quiz__is_active=True)),
        )
        .values("fact_owned", "fact_tutorial", "fact_quiz")
        .get()
    )
    return TaskFacts(user.is_superuser or row["fact_owned"], row["fact_tutorial"], row["fact_quiz"])


def check_can_contribute(
    task: Task, user, action: str, *, now=None, lock: bool = True, facts: TaskFacts | None = None
) -> TaskWorker | None:
    """Refuse ``user`` (signed in) writing (``action="write"``) or validating (``"validate"``) on ``task``
    if one of the task's rules says so; return their ``TaskWorker`` row (None for an owner, or without
    ``lock`` when they have none).

    The rules, tried in this order, each a ``NotQualified`` code:
    ``blocked`` (on the task's block list), ``not_allowed`` (the task requires its allow list and they
    are not on it), ``held`` (held for review), ``tutorial`` (the task has tutorial items they have not
    seen; write only), ``quiz`` (an active quiz they have not passed), ``daily_cap`` (the examples
    written, or verdicts cast, on the UTC day of ``now`` reached the task's cap), ``competition_limit``
    (a competition round: their examples in the current round reached ``examples_per_participant``;
    write only). Before them come the rules the apps above added (``add_contribution_rule``, in the
    order added; crowd's ``study``: a crowd account without a running study on the task);
    ``contribution_rules()`` lists them all. The task's owners and superusers
    are exempt from all of them (they test their own task); the account-wide rules
    (``User.can_contribute``) are the caller's and still apply.

    ``lock`` (the default) takes ``select_for_update`` on the user's ``TaskWorker`` row (created if
    missing) before counting, so two requests at once at the cap cannot both pass: call it inside the
    atomic block that then stores the example or verdict, and the second request counts the first's
    row once it commits. ``lock=False`` reads without locking or creating anything, for pages and
    early checks outside a transaction. ``facts``: this user's ``task_facts`` of ``task`` when the
    caller already read them (read here otherwise).

    Raises:
        NotQualified: the first rule that refuses.
        ValueError: an unknown ``action``.
        django.db.transaction.TransactionManagementError: ``lock`` outside a transaction.
    """
    if action not in ACTIONS:
        raise ValueError(f"{action!r} is not one of {ACTIONS}")
    facts = facts if facts is not None else task_facts(task, user)
    if facts.is_owner:  # the same rule as ``Task.is_owner``
        return None
    now = now or timezone.now()
    for _name, rule in list(_EXTRA_RULES):
        rule(task=task, user=user, action=action, lock=lock, now=now)
    if lock:
        worker, _ = TaskWorker.objects.select_for_update().get_or_create(task=task, user=user)
    else:
        # One row at most (unique per task and user): no ordering, so no join for Meta.ordering's task name.
        worker = TaskWorker.objects.filter(task=task, user=user).order_by("pk").first()
    listing = worker.listing if worker else TaskWorker.Listing.NONE
    if listing == TaskWorker.Listing.BLOCKED:
        raise NotQualified(
            "blocked", "You are on this task's block list: you cannot write or validate examples here."
        )
    if task.requires_allow_list and listing != TaskWorker.Listing.ALLOWED:
        raise NotQualified(
            "not_allowed",
            "This task is open only to the workers on its allow list, and you are not on it; ask the "
            "task's owners to add you.",
        )
    if worker is not None and worker.held_at is not None:
        raise NotQualified(
            "held",
            "An owner is reviewing your work on this task; you cannot write or validate here until they "
            "release the hold.",
        )
    if action == WRITE and (worker is None or worker.tutorial_seen_at is None) and facts.has_tutorial:
        raise NotQualified(
            "tutorial",
            "Read this task's tutorial before you write your first example.",
            reverse("tasks:tutorial", args=[task.slug]),
        )
    if facts.has_quiz and (worker is None or worker.quiz_passed_at is None):
        quiz = active_quiz(task)
        if quiz is not None:
            raise NotQualified("quiz", _quiz_message(quiz, user), reverse("tasks:quiz", args=[task.slug]))
    _check_daily_cap(task, user, action, now)
    if action == WRITE:
        _check_competition_limit(task, user)
    return worker


def _quiz_message(quiz: Quiz, user) -> str:
    if attempts_left(quiz, user) == 0:
        return (
            f"You have used all {_plural(quiz.max_attempts, 'attempt')} at this task's quiz without "
            "passing, so you cannot write or validate here; ask the task's owners if you think this is "
            "a mistake."
        )
    return "Pass this task's qualification quiz before you write or validate examples."


def _check_daily_cap(task: Task, user, action: str, now: datetime) -> None:
    if action == WRITE:
        cap, done, verb, again = task.daily_example_cap, examples_written_today, "written", "write"
    else:
        cap, done, verb, again = task.daily_validation_cap, validations_cast_today, "validated", "validate"
    if cap is None:
        return
    count = done(task, user, now)
    if count >= cap:
        raise NotQualified(
            "daily_cap",
            f"You have {verb} {_plural(count, 'example')} today, this task's daily limit; you can "
            f"{again} again after 00:00 UTC.",
        )


def _check_competition_limit(task: Task, user) -> None:
    round_ = task.current_round
    if round_ is None or not round_.is_competition or round_.examples_per_participant is None:
        return
    written = examples_in_round(round_, user)
    if written >= round_.examples_per_participant:
        raise NotQualified(
            "competition_limit",
            f"Round {round_.number} is a competition: each participant writes "
            f"{_plural(round_.examples_per_participant, 'example')}, and you have written {written}. "
            "Thank you for taking part.",
        )


# --- onboarding: the tutorial and the quiz ----------------------------------------------------------------


def mark_tutorial_seen(*, task: Task, user, now=None) -> TaskWorker:
    """Record that ``user`` went through the task's tutorial (the first time stays)."""
    worker = standing_of(task, user)
    if worker.tutorial_seen_at is None:
        worker.tutorial_seen_at = now or timezone.now()
        worker.save(update_fields=["tutorial_seen_at", "updated_at"])
    return worker


@dataclass(frozen=True)
class QuestionResult:
    """One question of a scored attempt: the choice given, whether it was right, the right answer and the
    explanation (the last three shown only when the result ``reveals_answers``)."""

    question_id: int
    text: str
    given: str
    correct: bool
    explanation: str
    answer: str


@dataclass(frozen=True)
class QuizResult:
    """A scored attempt: the stored ``attempt``, per-question ``results``, the attempts left (None: no
    limit) and whether the worker may see the per-question results (``reveals_answers``): when False
    the page shows the score and pass or fail only."""

    attempt: QuizAttempt
    results: list[QuestionResult]
    attempts_left: int | None
    reveals_answers: bool


def reveals_answers(mode: str, *, passed: bool, attempts_left: int | None) -> bool:
    """Whether an attempt's result may show each question's verdict, right answer and explanation, by
    the task config's ``quiz.reveal_answers`` (``mode``, ``tasks.config.QUIZ_REVEAL_CHOICES``):
    ``always``: yes; ``never``: no; ``after_last_attempt``: only when no attempt is to come, i.e. the
    worker passed or has ``attempts_left == 0`` after it (with no limit, ``None``, a failed attempt
    never reveals them). E.g. ``after_last_attempt`` with a failed attempt and 1 left: False.

    Raises:
        ValueError: an unknown ``mode``.
    """
    if mode not in QUIZ_REVEAL_CHOICES:
        raise ValueError(f"{mode!r} is not one of {QUIZ_REVEAL_CHOICES}")
    if mode == QUIZ_REVEAL_ALWAYS:
        return True
    if mode == QUIZ_REVEAL_AFTER_LAST_ATTEMPT:
        return passed or attempts_left == 0
    return False


def passes(n_correct: int, n_questions: int, pass_mark: float) -> bool:
    """Whether ``n_correct`` of ``n_questions`` reaches ``pass_mark`` (a share in (0, 1]): e.g. 3 of 4
    passes at 0.75 and 2 of 4 does not. A tiny tolerance keeps 7 of 10 a pass at 0.7 whatever the
    floating-point rounding of the product."""
    return n_questions > 0 and n_correct >= pass_mark * n_questions - 1e-9


@transaction.atomic
def submit_quiz(*, task: Task, user, answers: dict, now=None) -> QuizResult:
    """Score ``user``'s ``answers`` (question id → chosen text; a missing or unknown one is wrong) to the
    task's active quiz, store a ``QuizAttempt`` and, on a pass, set ``quiz_passed_at``. The result's
    ``reveals_answers`` follows the task config's ``quiz.reveal_answers`` (``reveals_answers``).

    The user's ``TaskWorker`` row is locked first, so two attempts sent at once count one after the
    other against ``max_attempts``.

    Raises:
        QuizError: no active quiz, already passed, or no attempts left.
    """
    quiz = active_quiz(task)
    if quiz is None:
        raise QuizError("This task has no quiz to take.")
    worker, _ = TaskWorker.objects.select_for_update().get_or_create(task=task, user=user)
    if worker.quiz_passed_at is not None:
        raise QuizError("You have already passed this task's quiz.")
    left = attempts_left(quiz, user)
    if left == 0:
        raise QuizError(_quiz_message(quiz, user))
    results = []
    stored = {}
    for question in quiz.questions.all():
        given = answers.get(str(question.pk), answers.get(question.pk, ""))
        given = given if isinstance(given, str) else ""
        stored[str(question.pk)] = given
        results.append(
            QuestionResult(
                question.pk,
                question.text,
                given,
                given == question.answer,
                question.explanation,
                question.answer,
            )
        )
    n_correct = sum(r.correct for r in results)
    passed = passes(n_correct, len(results), quiz.pass_mark)
    attempt = QuizAttempt.objects.create(
        quiz=quiz, user=user, answers=stored, n_correct=n_correct, n_questions=len(results), passed=passed
    )
    if passed:
        worker.quiz_passed_at = now or timezone.now()
        worker.save(update_fields=["quiz_passed_at", "updated_at"])
    left_after = None if left is None else left - 1
    reveal = reveals_answers(task.cfg.quiz_reveal_answers, passed=passed, attempts_left=left_after)
    return QuizResult(attempt, results, left_after, reveal)


def with_next(url: str, next_path: str) -> str:
    """``url`` (the tutorial or quiz page) with ``?next=next_path``, to come back after onboarding."""
    return f"{url}?{urlencode({'next': next_path})}"
