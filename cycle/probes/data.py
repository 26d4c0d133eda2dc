"""What the probes read of a round: its settled validated-correct examples (``training.examples.
usable_examples``: not retracted), without the replayed answers people rate (``Example.Source.RATING``:
a model wrote them, not an annotator), as texts with their label and author.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from annotation.models import Example
from cycle.kinds import rules_for
from tasks.config import TaskConfig
from tasks.models import Round

from ..training.examples import usable_examples


@dataclass
class RoundTexts:
    """A round's probe data, one entry per usable example in id order.

    ``baseline`` is the text the input-only baseline reads (``baseline_fields``; None when the example
    has none), ``written`` what the annotator wrote (every input field, joined by a newline), ``labels``
    the target label (None when it is not one of the task's labels) and ``authors`` the author's user id
    (None for an imported example, which has none). ``pending`` counts the round's examples still
    awaiting a verdict (not retracted): the probes leave them out until they settle.
    """

    baseline_fields: list[str]
    baseline: list[str | None] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    labels: list[str | None] = field(default_factory=list)
    authors: list[int | None] = field(default_factory=list)
    pending: int = 0


def baseline_fields(cfg: TaskConfig) -> list[str]:
    """The field the input-only baseline reads: of a pair the model reads (premise, hypothesis), the
    second, which the annotator wrote (the hypothesis-only baseline of Poliak et al. 2018); of a single
    text, that text (the statement). Empty for a task whose target is not a label (spans, generation)."""
    if rules_for(cfg).input_only_not_applicable:
        return []
    return [cfg.model_input_fields[-1]]


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def round_texts(round_: Round) -> RoundTexts:
    """Read ``round_``'s probe data (``RoundTexts``); one query for the examples, one for the count of
    pending ones."""
    task = round_.task
    cfg = task.cfg
    fields = baseline_fields(cfg)
    written_fields = [f["name"] for f in cfg.input_fields]
    known = set(cfg.labels)
    out = RoundTexts(baseline_fields=fields)
    rows = (
        usable_examples(task, [round_])
        .exclude(source=Example.Source.RATING)
        .order_by("id")
        .values_list("inputs", "context__data", "target", "annotator_id")
    )
    for inputs, context, target, author in rows.iterator():
        inputs = inputs if isinstance(inputs, dict) else {}
        model_input = Example.model_input_from(inputs, context if isinstance(context, dict) else None)
        out.baseline.append("\n".join(_text(model_input.get(f)) for f in fields) if fields else None)
        out.written.append("\n".join(_text(inputs.get(f)) for f in written_fields))
        out.labels.append(target if isinstance(target, str) and target in known else None)
        out.authors.append(author)
    out.pending = (
        Example.objects.filter(round=round_, status=Example.Status.PENDING, is_retracted=False)
        .exclude(source=Example.Source.RATING)
        .count()
    )
    return out


def left_out_counts(reasons: list[str]) -> dict[str, int]:
    """``{reason: count}`` of the examples a probe left out, most frequent first."""
    return dict(Counter(reasons).most_common())
