"""Evaluate a generative model on a red-teaming round's scoring dataset: its validated multiple-choice
items (docs/generative.md, "Multiple choice", "The scoring dataset").

Each item's ``inputs`` are ``{"messages": [...], "options": [...]}`` (the passage and the question as the
target read them, and the options in the order shown) and its ``target`` the correct option's index. The
model picks an option (``models_registry.generative.choose``: a local model by the options' per-byte
log-likelihoods, a remote one by the answer letter), and:

* **perf** = accuracy = items whose pick is the target / items;
* **throughput** = items / seconds of the one pass over the items (choosing, wall-clock; a local model
  is loaded before the pass, so its loading is not timed);
* **per_tag**: accuracy per item tag, as for classifiers;
* **memory**: a local model's weights in GiB (parameters and buffers); None for a remote one, whose
  memory cannot be measured here. No fairness or robustness (no perturbed copies of free text).
"""

from __future__ import annotations

import time

from core.metrics import per_tag_breakdown
from leaderboards.models import Dataset
from models_registry.models import RegisteredModel
from models_registry.serving import choose, local_weights_gib

GIB = 2**30


class NotMultipleChoice(ValueError):
    """The dataset has no items, or one that is not a multiple-choice item."""


def evaluate_generative_on_dataset(
    model: RegisteredModel, dataset: Dataset, *, progress=None
) -> tuple[float, dict, dict]:
    """``(perf, metrics, per_tag)`` of ``model`` on ``dataset`` (this module's figures), as
    ``leaderboards.evaluation.Evaluation`` holds them.

    Raises:
        NotMultipleChoice: no items, or an item that is not a multiple-choice item.
        InferenceError: the model fails to answer.
    """
    items = list(dataset.items.order_by("pk").values_list("inputs", "target", "tags"))
    if not items:
        raise NotMultipleChoice(f"dataset {dataset.slug} has no items")
    for inputs, target, _ in items:
        if not (isinstance(inputs, dict) and "options" in inputs and isinstance(target, int)):
            raise NotMultipleChoice(
                f"dataset {dataset.slug} holds an item that is not a multiple-choice item"
            )
    memory = local_weights_gib(model)  # loads a local model first: the load is not timed
    started = time.perf_counter()
    picks = []
    for n, (inputs, _target, _tags) in enumerate(items, start=1):
        picks.append(choose(model, inputs["messages"], inputs["options"]).picked)
        if progress is not None and n % 20 == 0:
            progress(f"{n} of {len(items)} items")
    seconds = time.perf_counter() - started
    gold = [str(target) for _, target, _ in items]
    predicted = [str(p) for p in picks]
    correct = sum(g == p for g, p in zip(gold, predicted, strict=True))
    accuracy = correct / len(items)
    metrics = {
        "perf_metric": "accuracy",
        "accuracy": accuracy,
        "n": len(items),
        "correct": correct,
        "seconds": seconds,
        "throughput": len(items) / seconds if seconds > 0 else None,
        "memory": memory,
        "memory_method": "weights" if memory is not None else "remote: not measured",
        "fairness": None,
        "robustness": None,
    }
    per_tag = per_tag_breakdown([tags or [] for _, _, tags in items], gold, predicted)
    return accuracy, metrics, per_tag
