"""The entry link of a study: how it is written for each platform, and how its query is read.

``GET /study/<public_id>/enter/?key=<entry_key>&<platform ids>`` (docs/crowd.md, "Entry link"):

* Prolific: ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID`` (Prolific fills in its ``{{%...%}}``
  placeholders);
* MTurk (ExternalQuestion): ``workerId``, ``assignmentId``, ``hitId``, ``turkSubmitTo`` (MTurk appends
  them); ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` is MTurk's preview;
* generic: ``participant_id`` and, optionally, ``session_id``.

Ids are 1 to 100 visible ASCII characters (``!`` to ``~``: no space, no control character).
``turkSubmitTo`` must be MTurk's own site or its sandbox, since the completion page posts the
assignment there.
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from urllib.parse import urlencode

from django.urls import reverse

from .models import Platform, Study

MAX_ID_LENGTH = 100
_ID = re.compile(rf"[!-~]{{1,{MAX_ID_LENGTH}}}")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")

#: What each platform appends to the link (Prolific's URL template; MTurk appends its own).
PROLIFIC_TEMPLATE = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


class BadEntry(Exception):
    """A missing or malformed id in the entry link; ``parameter`` names it, ``missing`` tells which
    (True: absent, empty or still the platform's placeholder; False: present but not a valid id)."""

    def __init__(self, parameter: str, message: str, *, missing: bool = True):
        self.parameter = parameter
        self.missing = missing
        super().__init__(message)


@dataclass(frozen=True)
class EntryIds:
    """The platform ids an entry link carried. ``preview`` is MTurk's preview (nobody is identified)."""

    participant_id: str = ""
    session_id: str = ""
    platform_study_id: str = ""
    assignment_id: str = ""
    hit_id: str = ""
    turk_submit_to: str = ""
    preview: bool = False


def key_matches(study: Study, given: str | None) -> bool:
    """Whether ``given`` is the study's entry key, compared in constant time."""
    return bool(given) and hmac.compare_digest(given.encode(), study.entry_key.encode())


def _id(query, name: str, *, required: bool = True) -> str:
    value = query.get(name)
    if value is None or value == "":
        if required:
            raise BadEntry(name, f"The link has no {name}; open the study from the platform again.")
        return ""
    if "{{%" in value:
        raise BadEntry(
            name, f"{name} is the platform's placeholder, not an id; open the study from the platform."
        )
    if not _ID.fullmatch(value):
        raise BadEntry(
            name,
            f"{name} is not a valid id: 1 to {MAX_ID_LENGTH} visible ASCII characters (no spaces).",
            missing=False,
        )
    return value


def parse_entry(study: Study, query) -> EntryIds:
    """Read the platform ids of ``study``'s entry link from ``query`` (a ``QueryDict`` or a dict).

    Raises:
        BadEntry: an id missing or malformed (``parameter`` says which).
    """
    if study.platform == Platform.PROLIFIC:
        return EntryIds(
            participant_id=_id(query, "PROLIFIC_PID"),
            platform_study_id=_id(query, "STUDY_ID"),
            session_id=_id(query, "SESSION_ID"),
        )
    if study.platform == Platform.MTURK:
        assignment = _id(query, "assignmentId")
        if assignment == MTURK_PREVIEW:
            return EntryIds(assignment_id=assignment, preview=True)
        submit_to = _id(query, "turkSubmitTo").rstrip("/")
        if submit_to not in MTURK_SUBMIT_HOSTS:
            raise BadEntry(
                "turkSubmitTo",
                f"turkSubmitTo must be one of {', '.join(MTURK_SUBMIT_HOSTS)}.",
                missing=False,
            )
        return EntryIds(
            participant_id=_id(query, "workerId"),
            assignment_id=assignment,
            hit_id=_id(query, "hitId"),
            turk_submit_to=submit_to,
        )
    return EntryIds(
        participant_id=_id(query, "participant_id"), session_id=_id(query, "session_id", required=False)
    )


def entry_path(study: Study) -> str:
    """The entry link's path and key, without the platform ids: ``/study/<uuid>/enter/?key=<key>``."""
    return reverse("crowd:enter", args=[study.public_id]) + "?" + urlencode({"key": study.entry_key})


def entry_link(study: Study, base_url: str = "") -> str:
    """The exact link to give the platform: ``base_url`` (e.g. ``https://dynabench.example``) + the path.

    Prolific: with its placeholders appended (paste it as the study URL). MTurk: as the ExternalQuestion
    URL (MTurk appends its ids). Generic: with ``&participant_id=`` for the platform to complete.
    """
    link = base_url.rstrip("/") + entry_path(study)
    if study.platform == Platform.PROLIFIC:
        return f"{link}&{PROLIFIC_TEMPLATE}"
    if study.platform == Platform.GENERIC:
        return f"{link}&participant_id="
    return link
