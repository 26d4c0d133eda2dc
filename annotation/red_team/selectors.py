"""Reads for the red-teaming pages: a user's own conversations and items, never another's; and, for the
data check ``check_red_team_contexts``, the rows stored without the context their task needs."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Conversation, Example
from tasks.kinds import conversational
from tasks.models import Round, Task

#: ``Example.metadata["mode"]`` of the examples written by red-teaming (conversations, choice items).
RED_TEAM_MODES = ("conversation", "multiple_choice")


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


def stored_without_context(task: Task | None = None) -> tuple[QuerySet[Conversation], QuerySet[Example]]:
    """``(conversations, examples)`` stored without a context in a red-teaming task that needs one
    (``TaskConfig.context_required``), of every such task or of ``task`` only, oldest first: conversations with no
    context (in any status), and red-teaming examples (``RED_TEAM_MODES``) written on the platform with
    none. Only rows stored before ``conversations.check_context`` refused them can be found here."""
    tasks = [t.pk for t in Task.objects.all() if conversational(t.cfg) and t.cfg.context_required]
    if task is not None:
        tasks = [pk for pk in tasks if pk == task.pk]
    conversations = (
        Conversation.objects.filter(round__task__in=tasks, context__isnull=True)
        .select_related("round__task", "annotator")
        .order_by("created_at", "id")
    )
    examples = (
        Example.objects.filter(
            round__task__in=tasks,
            context__isnull=True,
            source=Example.Source.CREATED,
            metadata__mode__in=RED_TEAM_MODES,
        )
        .select_related("round__task", "annotator")
        .order_by("created_at", "id")
    )
    return conversations, examples
