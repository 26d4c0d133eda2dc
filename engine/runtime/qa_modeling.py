"""The extractive-QA architecture this project trains: a BERT encoder with a start/end span head.

It is transformers' own ``BertForQuestionAnswering`` (encoder + one ``nn.Linear(hidden, 2)`` giving a
start and an end logit per token), so a saved model is a plain ``save_pretrained`` directory
(``config.json`` + ``model.safetensors`` + tokenizer) that ``AutoModelForQuestionAnswering`` loads. The
config carries what serving needs besides the weights (``QA_CONFIG_DEFAULTS``): the token window, the
doc stride for long passages and the longest answer, in tokens.

Only ``models_registry`` imports this module (it imports torch).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QA_ARCHITECTURE_SUFFIX = "ForQuestionAnswering"

QA_CONFIG_DEFAULTS: dict[str, Any] = {
    # tokens per window: [CLS] question [SEP] passage piece [SEP]
    "max_seq_length": 384,
    # tokens shared by two consecutive windows of a long passage (so no answer is cut by a window edge)
    "doc_stride": 128,
    # the longest answer the decoder considers, in tokens (SQuAD answers are short: 95% <= 12 tokens)
    "max_answer_tokens": 30,
    # at most this many question tokens; a longer question is cut (keeps room for the passage)
    "max_question_tokens": 64,
}


def is_qa_model_dir(path: str | Path) -> bool:
    """True if ``path/config.json`` names a ``*ForQuestionAnswering`` architecture (a span model).

    Never raises: an unreadable or missing config is "not QA" (the classifier loader reports it).
    """
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    architectures = config.get("architectures") or [] if isinstance(config, dict) else []
    return any(str(a).endswith(QA_ARCHITECTURE_SUFFIX) for a in architectures)


def qa_settings(config) -> dict[str, int]:
    """The serving settings of a loaded QA config, defaults filled in (``QA_CONFIG_DEFAULTS``)."""
    return {key: int(getattr(config, key, None) or default) for key, default in QA_CONFIG_DEFAULTS.items()}


def qa_model_from_backbone(backbone_path: str | Path, *, backbone: str, **settings: Any):
    """A ``BertForQuestionAnswering`` whose encoder is copied from a BERT ``save_pretrained`` directory.

    The span head is freshly initialised (seed torch first for determinism); ``backbone`` (a name) and
    the ``QA_CONFIG_DEFAULTS`` keys (overridable through ``settings``) are stored in its config.
    """
    from transformers import BertForQuestionAnswering
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "qa_outputs newly initialised" is expected, not news
    try:
        model = BertForQuestionAnswering.from_pretrained(str(backbone_path))
    finally:
        hf_logging.set_verbosity(verbosity)
    for key, default in QA_CONFIG_DEFAULTS.items():
        setattr(model.config, key, int(settings.get(key, default)))
    model.config.backbone = backbone
    model.config.architectures = ["BertForQuestionAnswering"]
    model.config.max_seq_length = min(model.config.max_seq_length, model.config.max_position_embeddings)
    return model
