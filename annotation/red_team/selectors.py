"""Reads for the red-teaming pages: a user's own conversations and items, never another's."""

from __future__ import annotations

from annotation.models import Conversation, Example
from tasks.models import Round


def open_conversation(user, round_: Round | None) -> Conversation | None:
    """``user``'s open conversation in ``round_`` (the latest), with its context and model; None if none."""
    if round_ is None:
        return None
    return (
        Conversation.objects.filter(round=round_, annotator=user, status=Conversation.Status.OPEN)
        .select_related("context", "model")
        .order_by("-created_at", "-id")
        .first()
    )


def own_conversation(user, pk: int | None) -> Conversation | None:
    """The conversation ``pk`` if ``user`` holds it, else None (another user's is as missing)."""
    if pk is None:
        return None
    return (
        Conversation.objects.filter(pk=pk, annotator=user)
        .select_related("round__task", "context", "model")
        .first()
    )


def own_choice_item(user, pk: int | None) -> Example | None:
    """``user``'s multiple-choice item ``pk``, else None."""
    if pk is None:
        return None
    return Example.objects.filter(pk=pk, annotator=user, metadata__mode="multiple_choice").first()
