"""Reads behind the round quality page's links (docs/crowd.md, "Quality"): who, among the people the page
lists, an export pseudonym names. The page shows people by pseudonym only (``validation.agreement``); an
owner who opens one is sent to that person's standing on the task (``quality.views.round_person``)."""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model

from annotation import selectors as annotation_selectors
from annotation.exports import PSEUDONYM_HEX_LENGTH, PSEUDONYM_PREFIX, pseudonym
from tasks.models import Round

from ..models import Validation

_PSEUDONYM = re.compile(rf"{re.escape(PSEUDONYM_PREFIX)}[0-9a-f]{{{PSEUDONYM_HEX_LENGTH}}}")


def people_of_round(round_: Round) -> set[int]:
    """The user ids the round's quality page lists, in two queries: the annotators of its collected
    examples (written here, not retracted) and the validators with an ordinary verdict on them (owner
    verdicts and gold answers are no such verdict), as ``validation.agreement.round_agreement`` counts
    them."""
    collected = annotation_selectors.collected_examples().filter(round=round_)
    annotators = collected.filter(annotator__isnull=False).order_by().values_list("annotator_id", flat=True)
    validators = (
        Validation.objects.filter(example__in=collected, is_owner_verdict=False)
        .order_by()
        .values_list("validator_id", flat=True)
    )
    return set(annotators.distinct()) | set(validators.distinct())


def person_of_pseudonym(round_: Round, person: str):
    """The user whose export pseudonym in ``round_`` is ``person`` (``anon-`` and 16 hex digits,
    ``annotation.exports.pseudonym``), among ``people_of_round(round_)``; None for anything else (a
    malformed text, someone who neither wrote nor validated in the round, a pseudonym of another round).

    The pseudonym is a keyed hash, so it is matched by hashing each of the round's people (one HMAC
    each, microseconds), never reversed.
    """
    if not _PSEUDONYM.fullmatch(person or ""):
        return None
    user_id = next((uid for uid in people_of_round(round_) if pseudonym(round_.pk, uid) == person), None)
    return None if user_id is None else get_user_model().objects.filter(pk=user_id).first()
