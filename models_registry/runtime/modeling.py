"""The classifier architecture this project trains: BERT encoder + masked mean pooling + dropout + linear head.

Two poolings, chosen by ``config.pooling``:

``"mean"`` (single texts; the default, and what a config without the key means)
    One mean-pooled vector of the whole input -> ``Linear(hidden, labels)``.
``"pair"`` (text pairs, e.g. NLI premise + hypothesis)
    The standard sentence-pair recipe (Conneau et al. 2017, InferSent, section 3.2; Reimers & Gurevych
    2019, Sentence-BERT, section 3): the joint encoding ``tokenizer(a, b)`` that the platform feeds every
    pair model is split by ``token_type_ids`` into ``[CLS] a [SEP]`` and ``[CLS] b [SEP]``, each is
    encoded on its own (as the bi-encoder MiniLM was trained), mean-pooled into ``u`` and ``v``, and
    the head reads ``(u, v, |u - v|, u * v)``: ``Linear(4 * hidden, labels)``.

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

from models_registry.runtime.preprocessing import DEFAULT_PREPROCESSING

MODEL_TYPE = "dynabench-mean-pool-classifier"
#: Values of ``config.pooling``.
POOLINGS = ("mean", "pair")


class MeanPoolClassifierConfig(BertConfig):
    """A ``BertConfig`` plus what the classifier needs to be served on its own.

    Extra attributes:
        backbone: name of the encoder it started from (e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``).
        preprocessing: the ``models_registry.runtime.preprocessing`` spec applied to every input text.
        max_input_tokens: tokens per input (truncation), 128 by default.
        pooling: ``"mean"`` (one vector per input) or ``"pair"`` (pair features of the two segments of
            a ``tokenizer(a, b)`` input); see the module docstring. Configs saved before this key
            existed load as ``"mean"``.
        id2label / label2id: the label strings, in output-index order (standard transformers fields).
    """

    model_type = MODEL_TYPE

    def __init__(
        self,
        backbone: str = "",
        preprocessing: dict[str, Any] | None = None,
        max_input_tokens: int = 128,
        pooling: str = "mean",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}; expected one of {list(POOLINGS)}")
        self.backbone = backbone
        self.preprocessing = dict(DEFAULT_PREPROCESSING if preprocessing is None else preprocessing)
        self.max_input_tokens = max_input_tokens
        self.pooling = pooling

    @property
    def feature_size(self) -> int:
        """Width of the vector the head reads: ``hidden_size``, or ``4 * hidden_size`` for ``"pair"``."""
        return self.hidden_size * (4 if self.pooling == "pair" else 1)


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


def pair_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Sentence-pair features ``(u, v, |u - v|, u * v)`` concatenated on the last axis.

    InferSent (Conneau et al. 2017, section 3.2) and Sentence-BERT (Reimers & Gurevych 2019, section 3,
    classification objective) feed these to the classifier.

    Args:
        u, v: (batch, hidden) tensors of the same shape and dtype.

    Returns:
        (batch, 4 * hidden) tensor. E.g. u = [[1, 2]], v = [[3, -1]] -> [[1, 2, 3, -1, 2, 3, 3, -2]].

    Raises:
        ValueError: u and v differ in shape.
    """
    if u.shape != v.shape:
        raise ValueError(f"u and v differ in shape: {tuple(u.shape)} and {tuple(v.shape)}")
    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


def split_pair(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    token_type_ids: torch.Tensor,
    pad_token_id: int = 0,
) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """Split a right-padded joint pair encoding ``[CLS] a [SEP] b [SEP] [PAD]...`` into two sequences.

    Args:
        input_ids / attention_mask / token_type_ids: (batch, tokens) long tensors as ``tokenizer(a, b)``
            returns them (segment A: type 0, segment B: type 1; padding on the right).
        pad_token_id: the id written into the padding of the new sequences.

    Returns:
        ``((ids_a, mask_a), (ids_b, mask_b))``: ``[CLS] a [SEP]`` and ``[CLS] b [SEP]`` (the row's first
        token, the [CLS], put in front of segment B), each right-padded to its longest row, with
        their attention masks. Token type ids of both are all zeros (encode them as single texts).

    Raises:
        ValueError: a row has no segment-B token (a single text given to a pair model).
    """
    real = attention_mask.bool()
    in_b = real & token_type_ids.bool()
    len_b = in_b.sum(dim=1)
    if bool((len_b == 0).any()):
        raise ValueError(
            "a pair model needs (a, b) text pairs (tokenizer(a, b) with token_type_ids); "
            "a row has no second text"
        )
    in_a = real & ~token_type_ids.bool()
    len_a = in_a.sum(dim=1)
    width_a = int(len_a.max())
    positions_a = torch.arange(width_a, device=input_ids.device).unsqueeze(0)
    mask_a = (positions_a < len_a.unsqueeze(1)).long()
    ids_a = torch.where(mask_a.bool(), input_ids[:, :width_a], pad_token_id)

    # Segment B starts right after segment A; its row j of the new sequence (j >= 1) is token
    # len_a + j - 1 of the joint one, and position 0 is the row's [CLS].
    width_b = int(len_b.max()) + 1
    positions_b = torch.arange(width_b, device=input_ids.device).unsqueeze(0)
    source = (len_a.unsqueeze(1) + positions_b - 1).clamp(min=0, max=input_ids.shape[1] - 1)
    ids_b = torch.gather(input_ids, 1, source)
    ids_b[:, 0] = input_ids[:, 0]
    mask_b = (positions_b <= len_b.unsqueeze(1)).long()
    ids_b = torch.where(mask_b.bool(), ids_b, pad_token_id)
    return (ids_a, mask_a), (ids_b, mask_b)


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
        self.classifier = nn.Linear(config.feature_size, config.num_labels)
        self.post_init()

    def _mean_vectors(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
        )
        return mean_pool(out.last_hidden_state, attention_mask)

    def embed(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The vectors the head reads, before dropout: (batch, ``config.feature_size``).

        ``"mean"``: the masked mean of the encoding of the whole input. ``"pair"``: ``pair_features``
        of the mean vectors of the two segments encoded separately (``split_pair``).

        Raises:
            ValueError: a ``"pair"`` model given no ``token_type_ids`` or a row without a second text.
        """
        pooling = getattr(self.config, "pooling", "mean")
        if pooling == "mean":
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return mean_pool(out.last_hidden_state, attention_mask)
        if token_type_ids is None:
            raise ValueError("a pair model needs token_type_ids: feed it tokenizer(a, b) pairs")
        (ids_a, mask_a), (ids_b, mask_b) = split_pair(
            input_ids, attention_mask, token_type_ids, self.config.pad_token_id or 0
        )
        return pair_features(self._mean_vectors(ids_a, mask_a), self._mean_vectors(ids_b, mask_b))

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
    pooling: str = "mean",
) -> MeanPoolClassifierConfig:
    """A classifier config with the encoder sizes of ``backbone_config``, the given labels and pooling."""
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
        pooling=pooling,
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
    pooling: str = "mean",
) -> MeanPoolClassifier:
    """A new classifier whose encoder weights are copied from a BERT ``save_pretrained`` directory.

    The head is freshly initialised (seed it with ``torch.manual_seed`` first for determinism);
    ``pooling`` as in ``MeanPoolClassifierConfig``.
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
        pooling=pooling,
    )
    model = MeanPoolClassifier(config)
    model.bert.load_state_dict(encoder.state_dict())
    return model


def parameter_count(model: nn.Module) -> int:
    """Number of scalar parameters (trainable or not) in ``model``."""
    return sum(p.numel() for p in model.parameters())


AutoConfig.register(MODEL_TYPE, MeanPoolClassifierConfig, exist_ok=True)
AutoModelForSequenceClassification.register(MeanPoolClassifierConfig, MeanPoolClassifier, exist_ok=True)
