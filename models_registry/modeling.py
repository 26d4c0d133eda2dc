"""The classifier architecture this project trains: BERT encoder + masked mean pooling + dropout + linear head.

Importing this module registers the config and model with ``AutoConfig`` and
``AutoModelForSequenceClassification`` under ``model_type = "dynabench-mean-pool-classifier"``, so a
``save_pretrained`` directory loads with ``AutoModelForSequenceClassification.from_pretrained(dir)``.
Only ``models_registry`` imports this module (it imports torch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import AutoConfig, AutoModelForSequenceClassification, BertConfig, BertModel
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertPreTrainedModel

from .preprocessing import DEFAULT_PREPROCESSING

MODEL_TYPE = "dynabench-mean-pool-classifier"


class MeanPoolClassifierConfig(BertConfig):
    """A ``BertConfig`` plus what the classifier needs to be served on its own.

    Extra attributes:
        backbone: name of the encoder it started from (e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``).
        preprocessing: the ``models_registry.preprocessing`` spec applied to every input text.
        max_input_tokens: tokens per input (truncation), 128 by default.
        id2label / label2id: the label strings, in output-index order (standard transformers fields).
    """

    model_type = MODEL_TYPE

    def __init__(
        self,
        backbone: str = "",
        preprocessing: dict[str, Any] | None = None,
        max_input_tokens: int = 128,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.backbone = backbone
        self.preprocessing = dict(DEFAULT_PREPROCESSING if preprocessing is None else preprocessing)
        self.max_input_tokens = max_input_tokens


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average token vectors over the attention mask.

    Args:
        hidden: (batch, tokens, hidden) float tensor.
        attention_mask: (batch, tokens), 1 for real tokens and 0 for padding.

    Returns:
        (batch, hidden) tensor; a row with no real token is all zeros (never NaN).
    """
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    summed = (hidden * mask).sum(dim=1)
    counts = mask.sum(dim=1).clamp(min=1e-9)
    return summed / counts


class MeanPoolClassifier(BertPreTrainedModel):
    """Sequence classifier: ``BertModel`` (no pooler) -> masked mean -> dropout -> ``nn.Linear``.

    ``forward`` returns a ``SequenceClassifierOutput`` with ``logits`` of shape (batch, num_labels)
    and, when ``labels`` (batch,) long tensor is given, the cross-entropy ``loss``.
    """

    config_class = MeanPoolClassifierConfig
    base_model_prefix = "bert"

    def __init__(self, config: MeanPoolClassifierConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        dropout = (
            config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        )
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def embed(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Mean-pooled sentence vectors, (batch, hidden), before dropout and head."""
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return mean_pool(out.last_hidden_state, attention_mask)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> SequenceClassifierOutput:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        pooled = self.embed(input_ids, attention_mask, token_type_ids)
        logits = self.classifier(self.dropout(pooled))
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits, labels)
        return SequenceClassifierOutput(loss=loss, logits=logits)


def config_from_backbone(
    backbone_config: BertConfig,
    *,
    labels: list[str],
    backbone: str,
    preprocessing: dict[str, Any] | None = None,
    max_input_tokens: int = 128,
) -> MeanPoolClassifierConfig:
    """A classifier config with the encoder sizes of ``backbone_config`` and the given labels."""
    data = backbone_config.to_dict()
    for key in (
        "model_type",
        "architectures",
        "_name_or_path",
        "transformers_version",
        "id2label",
        "label2id",
    ):
        data.pop(key, None)
    return MeanPoolClassifierConfig(
        backbone=backbone,
        preprocessing=preprocessing,
        max_input_tokens=max_input_tokens,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        architectures=["MeanPoolClassifier"],
        **data,
    )


def classifier_from_backbone(
    backbone_path: str | Path,
    *,
    labels: list[str],
    backbone: str,
    preprocessing: dict[str, Any] | None = None,
    max_input_tokens: int = 128,
) -> MeanPoolClassifier:
    """A new classifier whose encoder weights are copied from a BERT ``save_pretrained`` directory.

    The head is freshly initialised (seed it with ``torch.manual_seed`` first for determinism).
    """
    from transformers.utils import logging as hf_logging

    # The backbone's pooler weights are deliberately not loaded (mean pooling replaces it); keep the
    # "unexpected keys" report out of the output.
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        encoder = BertModel.from_pretrained(str(backbone_path), add_pooling_layer=False)
    finally:
        hf_logging.set_verbosity(verbosity)
    config = config_from_backbone(
        encoder.config,
        labels=labels,
        backbone=backbone,
        preprocessing=preprocessing,
        max_input_tokens=max_input_tokens,
    )
    model = MeanPoolClassifier(config)
    model.bert.load_state_dict(encoder.state_dict())
    return model


def parameter_count(model: nn.Module) -> int:
    """Number of scalar parameters (trainable or not) in ``model``."""
    return sum(p.numel() for p in model.parameters())


AutoConfig.register(MODEL_TYPE, MeanPoolClassifierConfig, exist_ok=True)
AutoModelForSequenceClassification.register(MeanPoolClassifierConfig, MeanPoolClassifier, exist_ok=True)
