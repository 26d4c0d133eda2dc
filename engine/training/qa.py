"""Training extractive-QA (span) target models on questions, passages and answers it is handed.

No database access here. The model is ``qa_modeling``'s ``BertForQuestionAnswering`` on the offline
all-MiniLM-L6-v2 backbone, saved with ``save_pretrained`` (safetensors) plus its fast tokenizer, so
``runtime.classifier.get_classifier`` serves it as a ``qa_inference.SpanPredictor``.

Each (question, passage) pair is tokenised into windows exactly as at prediction time
(``qa_inference.encode_windows``); a window whose passage part holds the whole answer is a training
feature with the answer's first and last token as targets, other windows are dropped (SQuAD v1.1 has
no unanswerable questions). The loss is the mean of the start and end cross-entropies (Devlin et al.
2019, section 4.2). The saved config records the training window and stride as the serving ones, so
the model is served in the windows it was trained on.

Recipes (``RECIPES``):

``quick``
    Every layer and the span head trained for one epoch on at most ``max_train_questions`` (1,400)
    questions, a seeded sample, in windows of 192 tokens (stride 64). AdamW, lr 2e-4, linear warm-up
    (10%) and decay, batch 16 (95 steps on SQuAD's training articles). Chosen on SQuAD dev (300
    questions, seed 0; ``benchmarks/qa_target.py``): dev F1 32.5%, against 14.2% (200 questions) for the former
    recipe (top 2 layers, 1,200 questions, 256-token windows) and 21.7% for lr 3e-4 on 1,200 questions;
    held-apart test F1 33.7% / EM 21.8% (500 questions). About 950 CPU seconds with the dev scoring on
    a loaded 2-core machine (24 min wall at load 5-6); a run of 1,200 questions took 584 CPU s (7 min)
    at load 3, so expect roughly 10 minutes on 2 idle cores.
``finetune``
    Every layer trained, two epochs over all questions, 384-token windows, lr 5e-5. Tens of minutes on 2
    cores.

Deterministic given ``seed`` (same data, machine and thread count). After training, the saved model is
scored on the dev questions with the platform's own predictor and SQuAD F1 / EM
(``core.metrics``).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from core.metrics import squad_exact_match, squad_f1
from engine.runtime.qa_inference import SpanPredictor, encode_windows
from engine.runtime.qa_modeling import QA_CONFIG_DEFAULTS, qa_model_from_backbone
from engine.runtime.weights import count_parameters
from engine.training.classifier import (
    DEFAULT_BACKBONE_NAME,
    TrainingError,
    default_backbone_path,
    seed_everything,
)

Progress = Callable[[str], None]

RECIPES: dict[str, dict[str, Any]] = {
    "quick": {
        "top_layers": None,  # all: MiniLM is 22M parameters; training only the top 2 reached F1 10.6%
        "epochs": 1,
        "lr": 2e-4,
        "batch_size": 16,
        "max_train_questions": 1400,
        "train_max_seq_length": 192,
        "train_doc_stride": 64,
    },
    "finetune": {
        "top_layers": None,  # all
        "epochs": 2,
        "lr": 5e-5,
        "batch_size": 16,
        "max_train_questions": None,
        "train_max_seq_length": 384,
        "train_doc_stride": 128,
    },
}
WARMUP_FRACTION = 0.1
BUCKET_BATCHES = 20
WEIGHT_DECAY = 0.01


@dataclass(frozen=True)
class QAItem:
    """One training or dev question: ``passage[answer_start : answer_start + len(answer)] == answer``
    (code points). ``answers`` lists every reference answer text (dev scoring takes the best)."""

    question: str
    passage: str
    answer: str
    answer_start: int
    answers: tuple[str, ...] = ()


@dataclass
class QATrainingResult:
    """What ``train_qa_model`` produced: the directory, dev SQuAD F1 / EM (fractions, None without dev
    items), counts, parameters, wall-clock seconds and recipe facts for the model card."""

    path: Path
    dev_f1: float | None
    dev_exact_match: float | None
    n_train: int
    n_dev: int
    n_features: int
    parameter_count: int
    seconds: float
    recipe: str
    details: dict[str, Any] = field(default_factory=dict)

    def as_card(self) -> dict[str, Any]:
        """The result as JSON-ready values (path as a string)."""
        data = asdict(self)
        data["path"] = str(self.path)
        return data


def _say(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(message)


def check_items(items: Sequence[QAItem], what: str) -> None:
    """Raise ``TrainingError`` naming the first item whose answer is not at its offset."""
    for n, item in enumerate(items):
        end = item.answer_start + len(item.answer)
        if not item.answer.strip() or item.passage[item.answer_start : end] != item.answer:
            raise TrainingError(f"{what} item {n}: the answer {item.answer[:40]!r} is not at its offset")


def build_features(tokenizer, items: Sequence[QAItem], settings: dict[str, int]) -> list[dict]:
    """Windows that contain their answer, with ``start_positions`` / ``end_positions`` token indices.

    Returns dicts of ``input_ids``, ``token_type_ids``, ``attention_mask`` (lists) and the two positions.
    """
    encoding = encode_windows(tokenizer, [i.question for i in items], [i.passage for i in items], settings)
    features = []
    for w in range(len(encoding["input_ids"])):
        item = items[encoding["overflow_to_sample_mapping"][w]]
        char_start, char_end = item.answer_start, item.answer_start + len(item.answer)
        sequence_ids = encoding.sequence_ids(w)
        offsets = encoding["offset_mapping"][w]
        passage_tokens = [t for t, sid in enumerate(sequence_ids) if sid == 1]
        if not passage_tokens:
            continue
        first, last = passage_tokens[0], passage_tokens[-1]
        if offsets[first][0] > char_start or offsets[last][1] < char_end:
            continue  # the answer is not (wholly) in this window
        start_token = next(t for t in passage_tokens if offsets[t][1] > char_start)
        end_token = next(t for t in reversed(passage_tokens) if offsets[t][0] < char_end)
        if end_token < start_token:
            continue
        features.append(
            {
                "input_ids": encoding["input_ids"][w],
                "token_type_ids": encoding["token_type_ids"][w],
                "attention_mask": encoding["attention_mask"][w],
                "start_positions": start_token,
                "end_positions": end_token,
            }
        )
    return features


def _freeze_below(model, top_layers: int | None) -> int:
    """Freeze embeddings and all but the top ``top_layers`` encoder layers; returns trainable scalars."""
    if top_layers is not None:
        layers = model.bert.encoder.layer
        for p in model.bert.embeddings.parameters():
            p.requires_grad_(False)
        for layer in layers[: max(0, len(layers) - top_layers)]:
            for p in layer.parameters():
                p.requires_grad_(False)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _bucketed_order(features: list[dict], batch_size: int, generator: torch.Generator) -> list[int]:
    """A seeded shuffle in which each run of ``BUCKET_BATCHES`` batches is sorted by length, so a batch
    pads little (windows of one batch have similar lengths) while batches still come in random order."""
    order = torch.randperm(len(features), generator=generator).tolist()
    chunk = batch_size * BUCKET_BATCHES
    out: list[int] = []
    for start in range(0, len(order), chunk):
        out += sorted(order[start : start + chunk], key=lambda i: len(features[i]["input_ids"]))
    batches = [out[i : i + batch_size] for i in range(0, len(out), batch_size)]
    shuffled = torch.randperm(len(batches), generator=generator).tolist()
    return [i for b in shuffled for i in batches[b]]


def score_predictions(items: Sequence[QAItem], answers: Sequence[str]) -> tuple[float, float]:
    """SQuAD F1 and EM (fractions) of predicted answer texts against the items' reference answers."""

    gold = [list(i.answers) or [i.answer] for i in items]
    return float(squad_f1(gold, list(answers))), float(squad_exact_match(gold, list(answers)))


def train_qa_model(
    *,
    train_items: Sequence[QAItem],
    dev_items: Sequence[QAItem],
    output_dir: str | Path,
    recipe: str = "quick",
    seed: int = 0,
    backbone_path: str | Path | None = None,
    backbone_name: str | None = None,
    overrides: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> QATrainingResult:
    """Train a span model on ``train_items`` and save it (with tokenizer) to ``output_dir``.

    Args:
        train_items / dev_items: ``QAItem``s; offsets in code points into their passages.
        output_dir: created if missing; model files in it are overwritten.
        recipe: a key of ``RECIPES``; ``overrides`` replaces any of its settings (e.g. ``epochs``).
        seed: seeds the question sample, head initialisation, shuffling and dropout.
        backbone_path / backbone_name: a BERT ``save_pretrained`` directory and its recorded name;
            default the offline all-MiniLM-L6-v2.
        progress: called with one-line progress messages.

    Returns:
        A ``QATrainingResult``; dev F1 / EM are measured on the saved model.

    Raises:
        TrainingError: unknown recipe or setting, no training items, an answer not at its offset, or no
            training window holding its answer.
    """
    from transformers import AutoTokenizer, get_linear_schedule_with_warmup
    from transformers.utils import logging as hf_logging

    started = time.monotonic()
    if recipe not in RECIPES:
        raise TrainingError(f"unknown recipe {recipe!r}; choose one of {list(RECIPES)}")
    settings = {**RECIPES[recipe], **(overrides or {})}
    unknown = set(settings) - set(RECIPES[recipe])
    if unknown:
        raise TrainingError(f"unknown training settings {sorted(unknown)}")
    if not train_items:
        raise TrainingError("no training questions")
    check_items(train_items, "training")
    check_items(dev_items, "dev")

    hf_logging.disable_progress_bar()
    if backbone_path is None:
        backbone_path = default_backbone_path()
        backbone_name = backbone_name or DEFAULT_BACKBONE_NAME
    backbone_name = backbone_name or Path(backbone_path).name
    seed_everything(seed)

    items = list(train_items)
    limit = settings["max_train_questions"]
    if limit is not None and len(items) > limit:
        items = random.Random(seed).sample(items, limit)
    tokenizer = AutoTokenizer.from_pretrained(str(backbone_path), local_files_only=True)
    if not getattr(tokenizer, "is_fast", False):
        raise TrainingError("the backbone has no fast tokenizer (tokenizer.json): offsets are needed")
    model = qa_model_from_backbone(backbone_path, backbone=backbone_name)
    window = {
        **{k: int(getattr(model.config, k)) for k in QA_CONFIG_DEFAULTS},
        "max_seq_length": min(settings["train_max_seq_length"], model.config.max_position_embeddings),
        "doc_stride": settings["train_doc_stride"],
    }
    window["doc_stride"] = min(window["doc_stride"], window["max_seq_length"] // 2)
    # Serve in the windows the model was trained on: positions past the training window were never tuned
    # (on SQuAD dev, a quick model served in 384-token windows scored F1 30.8% against 32.5% in its own 192).
    model.config.max_seq_length, model.config.doc_stride = window["max_seq_length"], window["doc_stride"]
    features = build_features(tokenizer, items, window)
    if not features:
        raise TrainingError("no training window holds its answer")
    trainable = _freeze_below(model, settings["top_layers"])
    _say(
        progress,
        f"recipe {recipe}: {len(items)} questions -> {len(features)} windows; "
        f"{trainable:,} trainable parameters",
    )

    batch_size, epochs = int(settings["batch_size"]), int(settings["epochs"])
    steps_per_epoch = math.ceil(len(features) / batch_size)
    total = steps_per_epoch * epochs
    parameters = [p for p in model.parameters() if p.requires_grad]
    no_decay = [
        p for n, p in model.named_parameters() if p.requires_grad and n.endswith(("bias", "LayerNorm.weight"))
    ]
    decay = [p for p in parameters if all(p is not q for q in no_decay)]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}],
        lr=float(settings["lr"]),
    )
    scheduler = get_linear_schedule_with_warmup(optimizer, int(WARMUP_FRACTION * total), total)
    generator = torch.Generator().manual_seed(seed)
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        order = _bucketed_order(features, batch_size, generator)
        running, epoch_started = 0.0, time.monotonic()
        for b, start in enumerate(range(0, len(order), batch_size)):
            batch_features = [features[i] for i in order[start : start + batch_size]]
            batch = tokenizer.pad(
                [
                    {k: f[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
                    for f in batch_features
                ],
                return_tensors="pt",
            )
            out = model(
                **batch,
                start_positions=torch.tensor([f["start_positions"] for f in batch_features]),
                end_positions=torch.tensor([f["end_positions"] for f in batch_features]),
            )
            out.loss.backward()
            nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            running += float(out.loss.detach())
            if (b + 1) % 20 == 0 or b + 1 == steps_per_epoch:
                _say(
                    progress,
                    f"epoch {epoch}/{epochs} step {b + 1}/{steps_per_epoch} loss {running / (b + 1):.3f} "
                    f"({time.monotonic() - epoch_started:.0f}s)",
                )
        history.append({"epoch": epoch, "train_loss": round(running / steps_per_epoch, 4)})
    for p in model.parameters():
        p.requires_grad_(True)
    model.eval()

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    train_seconds = time.monotonic() - started

    dev_f1 = dev_em = None
    if dev_items:
        _say(progress, f"scoring {len(dev_items)} dev questions")
        predictor = SpanPredictor(output_dir)
        outputs = predictor.predict_batch([(i.passage, i.question) for i in dev_items])
        dev_f1, dev_em = score_predictions(dev_items, [o["answer"] for o in outputs])
        _say(progress, f"dev SQuAD F1 {dev_f1:.4f}, EM {dev_em:.4f}")
    try:
        n_params = count_parameters(output_dir)
    except (OSError, ValueError):
        n_params = sum(p.numel() for p in model.parameters())
    details = {
        "seed": seed,
        "backbone": backbone_name,
        **{k: v for k, v in settings.items()},
        "trainable_parameters": trainable,
        "warmup_fraction": WARMUP_FRACTION,
        "weight_decay": WEIGHT_DECAY,
        "history": history,
        "training_seconds": round(train_seconds, 1),
    }
    return QATrainingResult(
        path=output_dir,
        dev_f1=None if dev_f1 is None else round(dev_f1, 4),
        dev_exact_match=None if dev_em is None else round(dev_em, 4),
        n_train=len(items),
        n_dev=len(dev_items),
        n_features=len(features),
        parameter_count=n_params,
        seconds=round(time.monotonic() - started, 1),
        recipe=recipe,
        details=details,
    )
