"""A tiny extractive-QA (span) model, built offline in milliseconds, and the passages of the QA tests.

``build_tiny_qa_model`` writes a ``save_pretrained`` ``BertForQuestionAnswering`` directory with random
weights; ``PASSAGES`` are the contexts of the ``qa_round`` fixture of tests/conftest.py, which also
defines ``qa_task``, ``qa_contexts``, ``tiny_qa_model_dir`` and ``tiny_qa_registered_model``.

The tiny model's answers are arbitrary but deterministic for a seed; tests check their shape (a span of
the passage at its code-point offset), not their wisdom.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.tiny_models import tiny_vocab

PASSAGES = (
    "Super Bowl 50 was an American football game. The Denver Broncos defeated the Carolina Panthers "
    "24-10 at Levi's Stadium in Santa Clara, California.",
    "🎉 The party 👨‍👩‍👧 met at the cafe\u0301 in מרכז העיר and then went home. قال الرئيس إن المدينة جميلة",
)


def build_tiny_qa_model(path: str | Path, seed: int = 0, **settings) -> Path:
    """Write a tiny random ``BertForQuestionAnswering`` (2 layers, hidden 32) and a fast tokenizer.

    ``settings`` override the QA serving settings stored in the config (e.g. ``max_seq_length=48,
    doc_stride=16`` to force several windows per passage). Returns ``path``.
    """
    import torch
    from transformers import BertConfig, BertForQuestionAnswering, BertTokenizer

    from engine.runtime.qa_modeling import QA_CONFIG_DEFAULTS

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    vocab_file = path / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(vocab_file), do_lower_case=True)
    tokenizer.model_max_length = 128
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=0,
        architectures=["BertForQuestionAnswering"],
    )
    for key, default in QA_CONFIG_DEFAULTS.items():
        setattr(config, key, int(settings.get(key, default)))
    config.max_seq_length = min(config.max_seq_length, 128)
    config.doc_stride = min(config.doc_stride, config.max_seq_length // 2)
    config.backbone = "tiny-random-bert"
    torch.manual_seed(seed)
    BertForQuestionAnswering(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
