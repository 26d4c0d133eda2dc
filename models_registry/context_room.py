"""Contexts that leave a round's target no room for the annotator's input (docs/domain.md, "Context
serving").

A classifier that reads the context with the input (a premise with its hypothesis) reads at most
``limit`` word pieces of the two together (128 for the demo's MiniLM targets). A premise that takes 120
of them leaves a hypothesis 8, and every example written on it is refused as too long for the target
(``annotation.services``: an ending the model never reads cannot be what fooled it). Such a context is
marked here, in its ``metadata`` under ``tasks.selectors.NO_ROOM``, and ``tasks.selectors.next_context``
does not serve it; the round page says how many are left out.

    report = check_context_room(round_)     # marks and unmarks the round's contexts, returns the counts

It runs when a round's targets are set (``round_targets``) and when a round opens with its contexts, and
``manage.py check_context_room`` runs it for any round (after contexts are loaded by other means).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from models_registry.inference import InferenceError, input_token_counts
from models_registry.kinds import chat_models
from models_registry.models import RegisteredModel, RoundTarget
from tasks.models import Context, Round
from tasks.selectors import NO_ROOM

logger = logging.getLogger(__name__)

#: The fewest word pieces a context must leave for the input. 95% of the hypotheses of ANLI round 3
#: take 23 or fewer with MiniLM's tokenizer (median 10); a context leaving fewer than 24 forces an input
#: shorter than almost any written for such a task.
MIN_INPUT_ROOM = 24


@dataclass(frozen=True)
class RoomReport:
    """What ``check_context_room`` found in a round.

    Attributes:
        checked: contexts counted (0 when no target reads the context with the input).
        left_out: contexts marked as leaving less than ``min_room`` word pieces, not served.
        min_room: the word pieces a context must leave for the input.
        limits: each checked target's name -> the word pieces it reads of one input.
    """

    checked: int
    left_out: int
    min_room: int
    limits: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        if not self.checked:
            return "no context to check (no target reads a context with the input)"
        reads = ", ".join(f"{name} reads {limit}" for name, limit in self.limits.items())
        return (
            f"{self.left_out} of {self.checked} contexts left out: they leave the target fewer than "
            f"{self.min_room} word pieces for the input ({reads})"
        )


def check_context_room(round_: Round, *, min_room: int = MIN_INPUT_ROOM) -> RoomReport:
    """Mark each context of ``round_`` that leaves one of its ready local classifier targets fewer than
    ``min_room`` word pieces for the input (``metadata[NO_ROOM] = {"model", "tokens", "limit",
    "min_room"}``, where ``tokens`` is what the context makes with empty inputs, special tokens
    included), and unmark the others. Idempotent; a red-teaming task (generative targets check the
    whole conversation themselves), a task whose targets read no context field, or a round without such
    a target checks nothing.

    Returns:
        A ``RoomReport``.

    Raises:
        ValueError: ``min_room`` below 0.
    """
    if min_room < 0:
        raise ValueError(f"min_room must be at least 0, not {min_room}")
    cfg = round_.task.cfg
    context_names = {spec["name"] for spec in cfg.context_fields}
    fields = cfg.model_input_fields
    if chat_models(cfg) or not context_names & set(fields):
        return RoomReport(0, 0, min_room)
    targets = [
        t.model
        for t in RoundTarget.objects.filter(round=round_, model__status=RegisteredModel.Status.READY)
        .select_related("model")
        .order_by("position", "id")
    ]
    contexts = list(Context.objects.filter(round=round_).order_by("pk"))
    inputs = [
        {name: str(c.data.get(name, "")) if name in context_names else "" for name in fields}
        for c in contexts
    ]
    marks: dict[int, dict] = {}
    limits: dict[str, int] = {}
    for model in targets:
        try:
            counted = input_token_counts(model, inputs, fields)
        except InferenceError:
            logger.warning("could not count the context tokens of model %s", model.pk, exc_info=True)
            continue
        if counted is None:
            continue
        tokens, limit = counted
        limits[model.name] = limit
        for context, n in zip(contexts, tokens, strict=True):
            if limit - n < min_room and context.pk not in marks:
                marks[context.pk] = {"model": model.name, "tokens": n, "limit": limit, "min_room": min_room}
    changed = []
    for context in contexts:
        mark = marks.get(context.pk)
        if (context.metadata or {}).get(NO_ROOM) != mark:
            metadata = {k: v for k, v in (context.metadata or {}).items() if k != NO_ROOM}
            if mark is not None:
                metadata[NO_ROOM] = mark
            context.metadata = metadata
            changed.append(context)
    Context.objects.bulk_update(changed, ["metadata"], batch_size=500)
    return RoomReport(len(contexts) if limits else 0, len(marks), min_room, limits)
