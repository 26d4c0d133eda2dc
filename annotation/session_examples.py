"""The examples written through this browser session's pages, per task: what the session tally counts
("2 of 3 fooled the model in this session", ``annotation.views``), not the same user's API submissions
or examples written in another browser.

Every page that stores an example records it here: the create page, and the red-teaming pages (a judged
conversation, a multiple-choice item), so the tally on the outcome page counts them all.

The session holds ``{task slug: [example id, ...]}`` under ``SESSION_EXAMPLES_KEY``, oldest first, at
most ``SESSION_EXAMPLES_KEPT`` ids per task.
"""

from __future__ import annotations

from tasks.models import Task

SESSION_EXAMPLES_KEY = "annotation.session_examples"
SESSION_EXAMPLES_KEPT = 500


def remember_example(request, task: Task, example_id: int) -> None:
    """Add ``example_id`` to the session's examples of ``task`` (once; the oldest dropped past
    ``SESSION_EXAMPLES_KEPT``)."""
    kept = dict(request.session.get(SESSION_EXAMPLES_KEY) or {})
    ids = [i for i in kept.get(task.slug, []) if i != example_id]
    ids.append(example_id)
    kept[task.slug] = ids[-SESSION_EXAMPLES_KEPT:]
    request.session[SESSION_EXAMPLES_KEY] = kept


def session_example_ids(request, task: Task) -> list[int]:
    """The ids ``remember_example`` kept for ``task`` (ints only: a tampered session adds nothing)."""
    ids = (request.session.get(SESSION_EXAMPLES_KEY) or {}).get(task.slug) or []
    return [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]


def forget_examples(request, task: Task) -> None:
    """Empty the session's examples of ``task`` (the tally's reset)."""
    kept = dict(request.session.get(SESSION_EXAMPLES_KEY) or {})
    kept.pop(task.slug, None)
    request.session[SESSION_EXAMPLES_KEY] = kept
