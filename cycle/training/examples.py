"""Reads of the examples a target model is trained and measured on: the rounds' settled
``validated_correct`` examples, by split, turned into model texts and labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet

from annotation.models import Example
from leaderboards.models import Dataset
from leaderboards.services import hash_split, round_dataset_slug
from tasks.models import Round, Task


@dataclass
class LabelledTexts:
    """Texts (or text pairs) with their label strings, and how many examples were skipped and why."""

    texts: list = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.texts)


def texts_of(task: Task, rows: Sequence[tuple[dict, object]]) -> LabelledTexts:
    """Build model texts (task's model_input_fields) and labels; skip rows with a missing field or label."""
    fields = task.cfg.model_input_fields
    known = set(task.cfg.labels)
    out = LabelledTexts()
    for inputs, target in rows:
        values = [inputs.get(f) if isinstance(inputs, dict) else None for f in fields]
        if not all(isinstance(v, str) and v.strip() for v in values) or target not in known:
            out.skipped += 1
            continue
        out.texts.append(values[0] if len(values) == 1 else (values[0], values[1]))
        out.labels.append(target)
    return out


def usable_examples(task: Task, rounds: Sequence[Round]) -> QuerySet[Example]:
    """Examples whose label may be trusted: settled ``validated_correct`` and not retracted."""
    return Example.objects.filter(
        round__task=task,
        round__in=list(rounds),
        status=Example.Status.VALIDATED_CORRECT,
        is_retracted=False,
    )


def split_examples(task: Task, rounds: Sequence[Round], split: str) -> QuerySet[Example]:
    """The rounds' usable examples of one split ("train", "dev" or "test").

    An example's split is the one its round dataset puts it in (``leaderboards.services.split_of``):
    its own when imported, else ``hash_split(pk)``. So a target trained on rounds 1-2 never trains on
    an example of ``round-1-test`` or ``round-2-test``, the datasets it is then scored on.
    """
    usable = usable_examples(task, rounds)
    unsplit = usable.filter(split="").values_list("pk", flat=True)
    hashed = [pk for pk in unsplit.iterator() if hash_split(pk) == split]
    return usable.filter(Q(split=split) | Q(pk__in=hashed))


def training_examples(task: Task, rounds: Sequence[Round]) -> QuerySet[Example]:
    """The training split of the rounds (``split_examples(task, rounds, "train")``): imported
    ``split="train"`` rows plus settled platform-written examples whose id hashes to train (80%)."""
    return split_examples(task, rounds, Example.Split.TRAIN)


def model_rows(queryset: QuerySet[Example]) -> list[tuple[dict, object]]:
    """``(model input, target)`` per example; the model input holds the context's fields too (NLI premise)."""
    rows = queryset.order_by("round__number", "id").values_list("context__data", "inputs", "target")
    return [
        (Example.model_input_from(inputs, context) if isinstance(inputs, dict) else inputs, target)
        for context, inputs, target in rows
    ]


def card_test_datasets(task: Task, rounds: Sequence[Round], eval_datasets: Sequence[str] = ()) -> list[str]:
    """Slugs of the datasets whose leaderboard evaluation gives a trained target's test figures: each
    training round's test split dataset (``round-N-test``, by round number), then each slug of
    ``eval_datasets`` (e.g. HateCheck); only those the task has, in that order.

    Training does not measure the model on them itself: the leaderboard evaluates every ready model on
    every scoring and standard dataset anyway, so measuring them at training time scored each pair
    twice. The model page reads the figures from those Scores (``leaderboards.selectors.card_test_figures``).
    The trainers build the rounds' datasets first (``services.build_round_datasets``), so a round with
    settled test examples has its test dataset here.
    """
    wanted = [round_dataset_slug(r, Example.Split.TEST) for r in sorted(rounds, key=lambda r: r.number)]
    wanted += [slug for slug in eval_datasets if slug not in wanted]
    have = set(Dataset.objects.filter(task=task, slug__in=wanted).values_list("slug", flat=True))
    return [slug for slug in wanted if slug in have]
