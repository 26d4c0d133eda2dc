"""Sections that the apps above ``tasks`` add to a task's page (docs/architecture.md, "Reaching up
without an import", pattern 4).

The task page (``tasks.views.task_detail``) lives in ``tasks``, which may import no app above it, yet
some of what it shows is theirs: the cycle matrix of every round target against every round's test
examples is read from ``leaderboards``' scores. A higher app registers a section provider in its
``AppConfig.ready()`` (``register(provider)``); the page asks ``sections_for(request, task)`` and
includes each section's template with its context. ``ready()`` of every installed app runs while the
project starts, before any page is served, so the sections are in place for the first request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .models import Task


@dataclass(frozen=True)
class PageSection:
    """A part of the task page: ``template`` (a template name, e.g.
    ``"cycle/_cycle_matrix.html"``) rendered with ``context`` added to the page's own."""

    template: str
    context: Mapping[str, Any]


#: ``(request, task) -> PageSection | None``: None shows nothing for this task.
SectionProvider = Callable[[Any, Task], PageSection | None]

_providers: list[SectionProvider] = []


def register(provider: SectionProvider) -> SectionProvider:
    """Add ``provider`` to the task page (once: registering it again changes nothing); returns it, so it
    serves as a decorator. Sections appear in registration order, i.e. ``INSTALLED_APPS`` order."""
    if provider not in _providers:
        _providers.append(provider)
    return provider


def unregister(provider: SectionProvider) -> None:
    """Remove ``provider`` (tests); a provider never registered is ignored."""
    if provider in _providers:
        _providers.remove(provider)


def sections_for(request, task: Task) -> list[PageSection]:
    """The sections of ``task``'s page for this request, in registration order, leaving out the
    providers that answered None."""
    sections = (provide(request, task) for provide in list(_providers))
    return [section for section in sections if section is not None]
