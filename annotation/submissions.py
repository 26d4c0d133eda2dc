"""One example as sent, and the rules that settle it before it is stored: the create page and the
examples API build a ``Submission`` and hand it to ``submit``, which returns the stored example or raises
one typed ``Refused``.

The page's rules (docs/domain.md, "Context serving"), checked in this order, each before the models run:

1. the task is not collecting (no open round): ``not_collecting``;
2. the context the form was written for can no longer take examples (its round is over, it was deleted,
   or none was sent where one is required): ``context_gone``, with the context it was written for
   (``written_for``, to show the refused text beside it);
3. another round opened since the form was served: ``round_changed``;
4. the form's signed stamp names another context than the one it sends (a browser put old text back):
   ``context_mismatch``, with the context it was written for (``context``);
5. the form's own fields are invalid: ``invalid`` (the form holds the messages); an annotation
   assistant's suggestion it names is not the writer's own unused one of this round: ``refused``
   (under ``suggestion``);
6. the service refuses it (``create_example``): ``refused``, or ``token_used`` when the form token was
   spent on another text (the form then needs a fresh token).

A submission from the API names its context by id in the body, already read by its serializer
(``context_given``); it carries no stamp and no round, so rules 2 to 4 never apply to it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from core.text_rules import ascii_id
from tasks import selectors as task_selectors
from tasks.models import Context, Task

from . import selectors, services
from .assistant import services as assistant
from .models import Example

UNSTAMPED = object()
"""``ExampleForm.stamped_context`` of a form without a valid stamp naming a context (a missing or forged
``started``, one signed for another token, or a page served before stamps named their context)."""

NOT_COLLECTING = "This task is not collecting examples right now; your example was not saved."
CONTEXT_MISMATCH = (
    "This form was written for another {noun} than the one the page showed (a browser can put back "
    "old text when you go Back). It was not saved. Here it is again with the {noun} it was written for: "
    "check it and send it again."
)


@dataclass(frozen=True)
class Submission:
    """An example as its writer sent it.

    ``inputs`` and ``target`` are the cleaned fields (None when the form's own fields are invalid,
    ``valid`` False). ``context_sent``: the context id as sent (text, or None); ``context_stamped``: the
    id the form's signed stamp names (an int, None for a form served without one, or ``UNSTAMPED``);
    ``round_sent``: the id of the round the form was served in (None: not said). ``context_given``: the
    caller read the context itself (the API's serializer): ``context`` is used as is.
    """

    task: Task
    annotator: Any
    inputs: dict | None = None
    target: Any = None
    valid: bool = True
    context_sent: str | None = None
    context_stamped: Any = UNSTAMPED
    round_sent: str | None = None
    context: Context | None = None
    context_given: bool = False
    client_token: uuid.UUID | None = None
    time_taken_ms: int | None = None
    explanation: str = ""
    metadata: dict = field(default_factory=dict)
    #: The annotation assistant's suggestion the example took (its id as sent), or None.
    suggestion_id: str | int | None = None

    @property
    def written_for(self) -> str | int | None:
        """The id of the context the form was written for: its stamp's, else the one it sends."""
        return self.context_sent if self.context_stamped is UNSTAMPED else self.context_stamped

    @property
    def round_changed(self) -> bool:
        """True when the form was served in another round than the task's current one (a form that does
        not say is taken as written for the current round)."""
        return bool(self.round_sent) and self.round_sent != str(self.task.current_round_id)


class Refused(services.ExampleError):
    """A submission that was not stored. ``code`` says which rule refused it (module docstring);
    ``context`` is the context to show the form with again (None: none, or a new one is served);
    ``written_for`` the context a ``context_gone`` form was written for (None if it no longer exists);
    ``cause`` the service's own error for ``refused`` and ``token_used``."""

    def __init__(
        self,
        errors: dict[str, list[str]] | str,
        *,
        code: str,
        context: Context | None = None,
        written_for: Context | None = None,
        cause: services.ExampleError | None = None,
    ):
        super().__init__(errors)
        self.code = code
        self.context = context
        self.written_for = written_for
        self.cause = cause


def context_noun(cfg) -> str:
    """What the task calls its context, for messages: the label of its first required context field
    (else of its first one), in lower case: "premise" (NLI), "passage" (QA), "prompt"."""
    specs = [spec for spec in cfg.context_fields if not spec.get("optional", False)] or cfg.context_fields
    return str(specs[0].get("label", specs[0]["name"])).lower() if specs else "context"


def _earlier_round_number(task: Task, sent_round: str) -> int | None:
    """The number of ``task``'s round whose id the form sent, or None (unknown or malformed id)."""
    round_id = ascii_id(sent_round)  # never "²" or 5,000 digits
    if round_id is None:
        return None
    return task.rounds.filter(pk=round_id).values_list("number", flat=True).first()


def round_changed_message(task: Task, sent_round: str) -> str:
    """Why a form served in an earlier round was not saved, naming both rounds where known."""
    earlier = _earlier_round_number(task, sent_round)
    where = f"Round {earlier} closed and round" if earlier is not None else "Round"
    return (
        f"{where} {task.current_round.number} opened while you were writing, with its own target "
        "model. Your example was not saved; check it and send it again to submit it to "
        f"round {task.current_round.number}."
    )


def context_gone_message(submission: Submission, written_for: Context | None) -> str:
    """Why a form was refused whose context can no longer take examples: ``written_for`` is that
    context (a ``Context`` of another round) or None (deleted, another task's, or none sent).

    E.g. "The premise you wrote for is no longer available (round 1 closed and round 2 opened while you
    were writing), so your example was not saved."
    """
    task = submission.task
    reason = ""
    if submission.round_changed:
        earlier = _earlier_round_number(task, submission.round_sent)
        closed = f"round {earlier} closed and " if earlier is not None else ""
        reason = f" ({closed}round {task.current_round.number} opened while you were writing)"
    elif written_for is not None:
        reason = " (its round is over)"
    return (
        f"The {context_noun(task.cfg)} you wrote for is no longer available{reason}, so your example "
        "was not saved."
    )


def settle_context(submission: Submission) -> Context | None:
    """The context ``submission`` is stored on, after rules 1 to 4 of the module docstring.

    Raises:
        Refused: ``not_collecting``, ``context_gone``, ``round_changed`` or ``context_mismatch``.
    """
    task = submission.task
    cfg = task.cfg
    if task.open_round is None:
        raise Refused(NOT_COLLECTING, code="not_collecting")
    if submission.context_given:
        return submission.context
    context = None
    written_for = submission.written_for
    if cfg.context_fields:
        if written_for is not None:
            context = task_selectors.context_of_round(task.current_round, written_for)
        # A task whose context fields are all optional (sentiment's prompt) can be written without one.
        if context is None and (cfg.context_required or written_for is not None):
            old = selectors.context_of_task(task, written_for)
            raise Refused(context_gone_message(submission, old), code="context_gone", written_for=old)
    if submission.round_changed:
        raise Refused(
            round_changed_message(task, submission.round_sent), code="round_changed", context=context
        )
    stamped = submission.context_stamped
    mismatch = (
        stamped is not UNSTAMPED and (None if stamped is None else str(stamped)) != submission.context_sent
    )
    if cfg.context_fields and mismatch:
        raise Refused(
            CONTEXT_MISMATCH.format(noun=context_noun(cfg)), code="context_mismatch", context=context
        )
    return context


def submit(submission: Submission) -> Example:
    """Store ``submission`` (``services.create_example``, idempotent per client token) once the rules of
    the module docstring let it through, and return the example (a resent one: the example stored).

    Raises:
        Refused: any rule's refusal; for ``refused`` and ``token_used`` ``cause`` is the service's
            ``ExampleError`` (``NotQualifiedToWrite``, ``TokenAlreadyUsed``, ...), whose ``errors`` it
            carries.
    """
    context = settle_context(submission)
    if not submission.valid:
        raise Refused({}, code="invalid", context=context)
    claim = None
    try:
        suggestion = assistant.usable_suggestion(
            submission.task,
            submission.annotator,
            submission.suggestion_id,
            client_token=submission.client_token,
        )
        if suggestion is not None:
            claim = assistant.claim_suggestion(suggestion, submission.client_token)
    except assistant.AssistantError as exc:
        raise Refused({"suggestion": [exc.message]}, code="refused", context=context) from None
    try:
        return _stored(submission, context, suggestion)
    finally:
        if claim is not None:
            assistant.release_claim(claim)


def _stored(submission: Submission, context, suggestion) -> Example:
    """``submit``'s storing, once its rules let the submission through."""
    try:
        example, _created = services.create_example(
            task=submission.task,
            annotator=submission.annotator,
            inputs=submission.inputs,
            target=submission.target,
            context=context,
            client_token=submission.client_token,
            time_taken_ms=submission.time_taken_ms,
            explanation=submission.explanation,
            metadata=submission.metadata,
        )
    except services.TokenAlreadyUsed as exc:
        raise Refused(exc.errors, code="token_used", context=context, cause=exc) from None
    except services.ExampleError as exc:
        raise Refused(exc.errors, code="refused", context=context, cause=exc) from None
    if suggestion is not None:
        first = submission.task.cfg.input_fields[0]["name"]
        assistant.take_suggestion(suggestion, example, str(example.inputs.get(first, "")))
    return example
