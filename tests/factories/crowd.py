"""Crowd studies and participants: ``make_study`` and ``enter_as`` (a participant through the entry link's
service, as the entry page would)."""

from __future__ import annotations

from decimal import Decimal

from crowd import services
from crowd.links import EntryIds
from crowd.models import Study

PROLIFIC_IDS = {
    "PROLIFIC_PID": "5f0c1e2d3b4a59687a8b9c0d",
    "STUDY_ID": "60aa11bb22cc33dd44ee55ff",
    "SESSION_ID": "s-1",
}
MTURK_IDS = {
    "workerId": "A1B2C3D4E5F6G7",
    "assignmentId": "3ASSIGN0000000000001",
    "hitId": "3HIT00000000000000001",
    "turkSubmitTo": "https://workersandbox.mturk.com",
}


def make_study(round_, **fields) -> Study:
    """A Prolific study of ``round_``: 2 examples and 1 validation per submission, 0.50 per example,
    0.10 per validation, 0.25 bonus per verified model-fooling example, 1.00 reward, 3 places, GBP;
    ``fields`` override any of it."""
    values = {
        "name": "Hate speech, round 1",
        "platform": "prolific",
        "examples_required": 2,
        "validations_required": 1,
        "reward": Decimal("1.00"),
        "pay_per_example": Decimal("0.50"),
        "pay_per_validation": Decimal("0.10"),
        "bonus_per_verified_fooling": Decimal("0.25"),
        "max_participants": 3,
        "completion_code": "C0DE1234",
        "consent_text": "I agree to take part in this study.",
        **fields,
    }
    return Study.objects.create(round=round_, **values)


def enter_as(study: Study, participant_id: str, **ids):
    """``participant_id`` enters ``study`` (the service behind the entry page); returns the ``Entry``."""
    return services.enter(study=study, ids=EntryIds(participant_id=participant_id, **ids))


def study_add_form(round_, **fields) -> dict:
    """The POST body of the admin's study add form for a generic study on ``round_`` (1 example at 0.20,
    10 places, 45 minutes), with ``fields`` replacing or adding values."""
    return {
        "name": "From the admin",
        "round": round_.pk,
        "platform": "generic",
        "examples_required": "1",
        "validations_required": "0",
        "reward": "0",
        "pay_per_example": "0.20",
        "pay_per_validation": "0",
        "bonus_per_verified_fooling": "0",
        "currency": "",
        "max_participants": "10",
        "completion_code": "",
        "completion_url": "https://lab.example/done",
        "time_limit_minutes": "45",
        "consent_text": "Yes.",
        "is_open": "on",
        **fields,
    }
