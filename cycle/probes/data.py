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
    #: One group key per example (``example_groups``): examples of one group stay in one fold.
    groups: list[str] = field(default_factory=list)
    #: How the examples were grouped, in words (``GROUPED_BY_*``).
    grouped_by: str = ""


#: How a round's examples were grouped for the probes' folds (``example_groups``), in words.
GROUPED_BY_PAIRS = "perturbation pairs (an example and its minimally edited twin, metadata matched_id)"
GROUPED_BY_DECLARED = "the groups the dataset declares (metadata group)"
GROUPED_BY_DECLARED_AND_PAIRS = (
    "the groups the dataset declares (metadata group) and perturbation pairs (matched_id)"
)
NOT_GROUPED = "not grouped: the dataset declares no groups or pairs, each example is its own"


def example_groups(external_ids: list[str], metadata: list[dict]) -> tuple[list[str], str]:
    """One group key per example, and how they were grouped (``GROUPED_BY_*``).

    An example's group is the one its dataset declares (``metadata["group"]``, a string or a whole
    number), joined with its perturbation partner's (``metadata["matched_id"]`` names the
    ``external_id`` of its twin, as HatemojiBuild's rows do): the connected sets of examples linked by
    either. A partner that is not in the round links nothing. An example with neither is its own group.

    Args:
        external_ids: the examples' ``external_id`` ("" for none), in order.
        metadata: their metadata dicts, in the same order.
    """
    parent = list(range(len(external_ids)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        parent[find(i)] = find(j)

    by_external = {e: i for i, e in enumerate(external_ids) if e}
    by_declared: dict[str, int] = {}
    declared = paired = False
    for i, meta in enumerate(metadata):
        group = meta.get("group") if isinstance(meta, dict) else None
        if isinstance(group, str | int) and not isinstance(group, bool) and str(group).strip():
            declared = True
            key = str(group).strip()
            union(i, by_declared.setdefault(key, i))
        partner = meta.get("matched_id") if isinstance(meta, dict) else None
        if isinstance(partner, str) and partner.strip() in by_external:
            paired = True
            union(i, by_external[partner.strip()])
    keys = [f"g{find(i)}" for i in range(len(external_ids))]
    if declared and paired:
        return keys, GROUPED_BY_DECLARED_AND_PAIRS
    if declared:
        return keys, GROUPED_BY_DECLARED
    if paired:
        return keys, GROUPED_BY_PAIRS
    return keys, NOT_GROUPED


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
        .values_list("inputs", "context__data", "target", "annotator_id", "external_id", "metadata")
    )
    external_ids, metadata = [], []
    for inputs, context, target, author, external_id, meta in rows.iterator():
        external_ids.append(external_id or "")
        metadata.append(meta if isinstance(meta, dict) else {})
        inputs = inputs if isinstance(inputs, dict) else {}
        model_input = Example.model_input_from(inputs, context if isinstance(context, dict) else None)
        out.baseline.append("\n".join(_text(model_input.get(f)) for f in fields) if fields else None)
        out.written.append("\n".join(_text(inputs.get(f)) for f in written_fields))
        out.labels.append(target if isinstance(target, str) and target in known else None)
        out.authors.append(author)
    out.groups, out.grouped_by = example_groups(external_ids, metadata)
    out.pending = (
        Example.objects.filter(round=round_, status=Example.Status.PENDING, is_retracted=False)
        .exclude(source=Example.Source.RATING)
        .count()
    )
    return out


def left_out_counts(reasons: list[str]) -> dict[str, int]:
    """``{reason: count}`` of the examples a probe left out, most frequent first."""
    return dict(Counter(reasons).most_common())
