"""Several models in one conversation (docs/generative.md, "Several models in one conversation"): the first
message of a side-by-side conversation is answered by ``red_team.side_by_side.models`` of the round's
targets, drawn at random and shown without names (``conversations.send_turn``); the writer rates each
answer (a 1-100 slider and the task's rubric) and chooses the one to go on with (``rate_answers``);
later messages go to the chosen model.

The design follows PRISM (Kirk et al. 2024, "The PRISM Alignment Dataset: What Participatory,
Representative and Individualised Human Feedback Reveals About the Subjective and Multicultural Alignment
of Large Language Models", NeurIPS Datasets and Benchmarks), run on Dynabench: four models drawn from 21
answered each opening message, rated on a 1-100 slider, and the highest rated continued.
"""

from __future__ import annotations

import re

from django.db import transaction

from annotation.models import CandidateRating, Conversation, Turn

from .conversations import (
    ConversationError,
    answering_model,
    clean_judgement,
    end_lost_turn,
    is_lost,
    ready_models,
)

#: The rating scale (PRISM's slider).
LOWEST, HIGHEST = 1, 100


def letters(turns: list[Turn]) -> str:
    """The answers' names in slot order, said for a person: "A, B and C"."""
    names = [t.slot_letter for t in turns]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


_DIGITS = re.compile(r"[0-9]{1,3}")


def _score(letter: str, value) -> int:
    if value is None:  # the page sends no score for a slider never touched: 50 that nobody chose
        raise ConversationError(
            f"Answer {letter}: give it a rating from {LOWEST} to {HIGHEST} (on the page, move its slider; "
            "one left untouched is no rating).",
            code="invalid",
        )
    # A form's text holds plain ASCII digits only: int() would also take "5_0" and "٥٠" (other scripts'
    # digits), which the API's JSON integer never is.
    if isinstance(value, str):
        value = int(value) if _DIGITS.fullmatch(value := value.strip()) else None
    elif isinstance(value, bool) or not isinstance(value, int):
        value = None
    if value is None or not LOWEST <= value <= HIGHEST:
        raise ConversationError(
            f"Answer {letter}: the rating must be a whole number from {LOWEST} to {HIGHEST}.", code="invalid"
        )
    return value


def _cleaned(
    cfg, answers: list[Turn], ratings, chosen
) -> tuple[dict[str, tuple[int, dict, list, bool]], str]:
    """``({letter: (score, rubric answers, categories, failed)}, chosen letter)`` from what the writer
    sent, every problem a ``ConversationError`` (``invalid``) naming the answer it is about."""
    if not isinstance(ratings, dict):
        raise ConversationError("Send a rating for each answer, by its letter.", code="invalid")
    expected = [t.slot_letter for t in answers]
    unknown = sorted(set(map(str, ratings)) - set(expected))
    if unknown:
        raise ConversationError(
            f"There is no answer {', '.join(unknown)} to rate; rate {letters(answers)}.", code="invalid"
        )
    missing = [letter for letter in expected if letter not in ratings]
    if missing:
        raise ConversationError(f"Rate answer {', '.join(missing)} too.", code="invalid")
    cleaned = {}
    for letter in expected:
        given = ratings[letter]
        if not isinstance(given, dict):
            raise ConversationError(
                f"Answer {letter}: send its score, rubric and categories.", code="invalid"
            )
        score = _score(letter, given.get("score"))
        try:
            rubric, categories, failed = clean_judgement(
                cfg, given.get("rubric"), given.get("categories") or ()
            )
        except ConversationError as exc:
            raise ConversationError(f"Answer {letter}: {exc}", code=exc.code) from None
        cleaned[letter] = (score, rubric, categories, failed)
    if chosen not in expected:
        raise ConversationError(f"Choose the answer to go on with: {letters(answers)}.", code="invalid")
    return cleaned, chosen


def _same(stored: list[CandidateRating], cleaned: dict, chosen: str) -> bool:
    """True when ``stored`` ratings are the ones ``cleaned`` and ``chosen`` say (a resent form)."""
    sent = {
        letter: (score, rubric, sorted(categories), letter == chosen)
        for letter, (score, rubric, categories, _failed) in cleaned.items()
    }
    kept = {r.turn.slot_letter: (r.score, r.answers, sorted(r.tags), r.chosen) for r in stored}
    return sent == kept


def rate_answers(*, conversation: Conversation, annotator, ratings, chosen) -> Conversation:
    """Store the writer's ratings of the side-by-side answers to their first message and the answer they
    go on with; the conversation's model becomes the chosen answer's model, and its thread holds that
    answer (``conversations.thread``).

    Args:
        ratings: ``{letter: {"score": 1-100, "rubric": {question: answer}, "categories": [name]}}``, one
            per answer that came (a failed answer takes none), the letters as the page shows them ("A").
        chosen: the letter of the answer to go on with.

    Rated once: the same ratings sent again (a double click) return the conversation; others are refused
    (``already_rated``). Nothing is stored on any refusal.

    Raises:
        ConversationError: another user's conversation (``not_found``), one with one model
            (``not_side_by_side``), not open (``not_open``), a round closed (``round_closed``), no first
            message yet or an answer still coming (``not_ready``), no answer came (``nothing_to_rate``),
            a bad rating (``invalid``: a letter unknown or left out, a score out of 1-100, a rubric answer
            or category refused, a choice among none of the answers; each naming the answer), or rated
            before with other ratings (``already_rated``).
    """
    if conversation.annotator_id != getattr(annotator, "pk", None):
        raise ConversationError("No such conversation.", code="not_found")
    if not conversation.side_by_side:
        raise ConversationError(
            "One model answers this conversation; there is nothing to rate side by side.",
            code="not_side_by_side",
        )
    cfg = conversation.round.task.cfg
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().select_related("round").get(pk=conversation.pk)
        answers = list(locked.turns.filter(slot__isnull=False).select_related("model").order_by("slot"))
        if locked.chosen_turn_id is not None:
            stored = list(CandidateRating.objects.filter(turn__in=answers).select_related("turn"))
            came = [t for t in answers if t.status == Turn.Status.ANSWERED]
            try:
                same = _same(stored, *_cleaned(cfg, came, ratings, chosen))
            except ConversationError:
                same = False
            if same:
                return locked
            told = ", ".join(f"{r.turn.slot_letter} {r.score}" for r in stored)
            chosen_letter = next((r.turn.slot_letter for r in stored if r.chosen), "")
            raise ConversationError(
                f"You already rated these answers ({told}) and went on with {chosen_letter}; your new "
                "ratings were not stored.",
                code="already_rated",
            )
        if locked.status != Conversation.Status.OPEN:
            raise ConversationError("This conversation is over; start a new one.", code="not_open")
        if not locked.round.is_open:
            raise ConversationError("This round is closed; nothing was stored.", code="round_closed")
        if not answers:
            raise ConversationError(
                "Send your first message; the models' answers come next.", code="not_ready"
            )
        for turn in answers:
            if is_lost(turn):
                end_lost_turn(turn, answering_model(turn))
        if any(t.status == Turn.Status.ANSWERING for t in answers):
            raise ConversationError("Wait until every answer has come before rating them.", code="not_ready")
        came = [t for t in answers if t.status == Turn.Status.ANSWERED]
        if not came:
            raise ConversationError(
                "No model answered your first message; leave this conversation and start another.",
                code="nothing_to_rate",
            )
        cleaned, chosen = _cleaned(cfg, came, ratings, chosen)
        by_letter = {t.slot_letter: t for t in came}
        CandidateRating.objects.bulk_create(
            CandidateRating(
                turn=by_letter[letter],
                score=score,
                answers=rubric,
                failed=failed,
                tags=categories,
                chosen=letter == chosen,
            )
            for letter, (score, rubric, categories, failed) in cleaned.items()
        )
        picked = by_letter[chosen]
        locked.chosen_turn, locked.model = picked, picked.model
        locked.save(update_fields=["chosen_turn", "model", "updated_at"])
    return locked


def side_by_side_targets(config: dict, task=None) -> list[str]:
    """The registry check of ``red_team.side_by_side`` (``tasks.config_checks``): a task whose open round
    has fewer ready targets than the models asked is refused, with the counts and the names. Nothing to
    check for a task not yet stored or without an open round (a conversation is refused at its start
    then: ``conversations.candidates_of``, on the same ``ready_models``)."""
    k = ((config.get("red_team") or {}).get("side_by_side") or {}).get("models")
    round_ = getattr(task, "open_round", None) if task is not None else None
    if not k or round_ is None:
        return []
    ready = [m.name for m in ready_models(round_)]
    if len(ready) >= k:
        return []
    return [
        f"config['red_team']['side_by_side']['models']: {k} models cannot answer side by side: round "
        f"{round_.number} has {len(ready)} ready target model{'' if len(ready) == 1 else 's'}"
        f"{' (' + ', '.join(ready) + ')' if ready else ''}. Add targets to the round first, or ask for "
        f"at most {max(len(ready), 2)}."
    ]
