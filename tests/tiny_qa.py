"""A tiny extractive-QA (span) model, built offline in milliseconds, the ``qa`` task, and fixtures.

Use with ``pytest_plugins = ["tests.tiny_qa"]`` in a test module or import the fixtures into a folder's
``conftest.py``. Fixtures:

    qa_task: the built-in ``qa`` task.
    qa_round: its round 1, current, with two contexts (``qa_contexts``), no target yet.
    tiny_qa_model_dir: a ``save_pretrained`` ``BertForQuestionAnswering`` directory with random weights.
    tiny_qa_registered_model: that directory registered as a ready model of ``qa`` and made the target of
        ``qa_round``.

The tiny model's answers are arbitrary but deterministic for a seed; tests check their shape (a span of
the passage at its code-point offset), not their wisdom.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_models import tiny_vocab

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

    from models_registry.qa_modeling import QA_CONFIG_DEFAULTS

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


@pytest.fixture
def qa_task(db):
    from tasks.services import ensure_builtin_task

    return ensure_builtin_task("qa")


@pytest.fixture
def qa_round(qa_task):
    """Round 1 of ``qa``, current, with the two ``PASSAGES`` as contexts (no target model)."""
    from tasks.models import Context
    from tasks.services import ensure_round, set_current_round

    round_ = ensure_round(task=qa_task, number=1)
    set_current_round(task=qa_task, round_=round_)
    for n, passage in enumerate(PASSAGES):
        Context.objects.create(
            task=qa_task,
            round=round_,
            data={"title": f"Passage {n}", "context": passage},
            external_id=f"p{n}",
        )
    return round_


@pytest.fixture
def qa_contexts(qa_round):
    return list(qa_round.contexts.order_by("external_id"))


@pytest.fixture
def tiny_qa_model_dir(tmp_path) -> Path:
    return build_tiny_qa_model(tmp_path / "tiny-qa")


@pytest.fixture
def tiny_qa_registered_model(qa_task, qa_round, tiny_qa_model_dir):
    """A ready RegisteredModel ("tiny-qa") of ``qa``, the only target of ``qa_round``."""
    from models_registry.inference import clear_cache
    from models_registry.round_targets import set_round_targets
    from models_registry.services import register_local_model

    model = register_local_model(
        task=qa_task,
        name="tiny-qa",
        path=str(tiny_qa_model_dir),
        card={"description": "Tiny random QA model."},
    )
    assert model.status == model.Status.READY, model.error_message
    set_round_targets(round=qa_round, models=[model])
    yield model
    clear_cache()
