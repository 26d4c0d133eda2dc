"""The classifier architecture this project trains: an encoder + masked mean pooling + dropout + linear head.

Two encoders: BERT (``MeanPoolClassifier``; all-MiniLM-L6-v2, the default backbone) and MPNet
(``MPNetMeanPoolClassifier``; all-mpnet-base-v2, opt-in, ``engine.runtime.backbones``). Both share
the pooling and the head (``PooledHead``); MPNet's tokenizer does not mark the two texts of a pair, so an
MPNet classifier takes single texts only.

Two poolings, chosen by ``config.pooling``:

``"mean"`` (single texts; the default, and what a config without the key means)
    One mean-pooled vector of the whole input -> ``Linear(hidden, labels)``.
``"pair"`` (text pairs, e.g. NLI premise + hypothesis)
    The standard sentence-pair recipe (Conneau et al. 2017, InferSent, section 3.2; Reimers & Gurevych
    2019, Sentence-BERT, section 3): the joint encoding ``tokenizer(a, b)`` that the platform feeds every
    pair model is split by ``token_type_ids`` into ``[CLS] a [SEP]`` and ``[CLS] b [SEP]``, each is
    encoded on its own (as the bi-encoder MiniLM was trained), mean-pooled into ``u`` and ``v``, and
    the head reads ``(u, v, |u - v|, u * v)``: ``Linear(4 * hidden, labels)``.

Importing this module registers the configs and models with ``AutoConfig`` and
``AutoModelForSequenceClassification`` under ``model_type = "dynabench-mean-pool-classifier"`` (BERT) and
``"dynabench-mpnet-mean-pool-classifier"`` (MPNet), so a ``save_pretrained`` directory loads with
``AutoModelForSequenceClassification.from_pretrained(dir)``.
Only ``models_registry`` imports this module (it imports torch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    BertConfig,
    BertModel,
    MPNetConfig,
    MPNetModel,
    PretrainedConfig,
)
from transformers.modeling_outputs import SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertPreTrainedModel
from transformers.models.mpnet.modeling_mpnet import MPNetPreTrainedModel

from engine.runtime.preprocessing import DEFAULT_PREPROCESSING

MODEL_TYPE = "dynabench-mean-pool-classifier"
MPNET_MODEL_TYPE = "dynabench-mpnet-mean-pool-classifier"
#: Values of ``config.pooling``.
POOLINGS = ("mean", "pair")


class _ClassifierExtras:
    """What a pooled classifier's config holds beyond its encoder's sizes (``MeanPoolClassifierConfig``)."""

    def _set_extras(
        self,
        backbone: str,
        preprocessing: dict[str, Any] | None,
        max_input_tokens: int,
        pooling: str,
        poolings: tuple[str, ...] = POOLINGS,
    ) -> None:
        if pooling not in poolings:
            raise ValueError(f"unknown pooling {pooling!r}; expected one of {list(poolings)}")
        self.backbone = backbone
        self.preprocessing = dict(DEFAULT_PREPROCESSING if preprocessing is None else preprocessing)
        self.max_input_tokens = max_input_tokens
        self.pooling = pooling

    @property
    def feature_size(self) -> int:
        """Width of the vector the head reads: ``hidden_size``, or ``4 * hidden_size`` for ``"pair"``."""
        return self.hidden_size * (4 if self.pooling == "pair" else 1)


class MeanPoolClassifierConfig(_ClassifierExtras, BertConfig):
    """A ``BertConfig`` plus what the classifier needs to be served on its own.

    Extra attributes:
        backbone: name of the encoder it started from (e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``).
        preprocessing: the ``engine.runtime.preprocessing`` spec applied to every input text.
        max_input_tokens: tokens per input (truncation), 128 by default.
        pooling: ``"mean"`` (one vector per input) or ``"pair"`` (pair features of the two segments of
            a ``tokenizer(a, b)`` input); see the module docstring. Configs saved before this key
            existed load as ``"mean"``.
        id2label / label2id: the label strings, in output-index order (standard transformers fields).

    Raises:
        ValueError: an unknown pooling.
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
        self._set_extras(backbone, preprocessing, max_input_tokens, pooling)


class MPNetMeanPoolClassifierConfig(_ClassifierExtras, MPNetConfig):
    """An ``MPNetConfig`` plus the attributes of ``MeanPoolClassifierConfig``; ``pooling`` is ``"mean"``
    only (MPNet's tokenizer gives no segment ids to split a pair by).

    Raises:
        ValueError: a pooling other than ``"mean"``.
    """

    model_type = MPNET_MODEL_TYPE

    def __init__(
        self,
        backbone: str = "",
        preprocessing: dict[str, Any] | None = None,
        max_input_tokens: int = 128,
        pooling: str = "mean",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._set_extras(backbone, preprocessing, max_input_tokens, pooling, poolings=("mean",))


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


class PooledHead:
    """The pooling and head shared by this project's classifiers (mixed into a transformers
    ``PreTrainedModel`` whose ``encoder_states`` runs its encoder).

    ``forward`` returns a ``SequenceClassifierOutput`` with ``logits`` of shape (batch, num_labels)
    and, when ``labels`` (batch,) long tensor is given, the cross-entropy ``loss``.
    """

    def encoder_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None
    ) -> torch.Tensor:
        """The encoder's last hidden states, (batch, tokens, hidden)."""
        raise NotImplementedError

    def _mean_vectors(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        states = self.encoder_states(input_ids, attention_mask, torch.zeros_like(input_ids))
        return mean_pool(states, attention_mask)

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
            return mean_pool(self.encoder_states(input_ids, attention_mask, token_type_ids), attention_mask)
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


def _head(model: nn.Module, config) -> None:
    dropout = (
        config.classifier_dropout
        if getattr(config, "classifier_dropout", None) is not None
        else (config.hidden_dropout_prob)
    )
    model.dropout = nn.Dropout(dropout)
    model.classifier = nn.Linear(config.feature_size, config.num_labels)


class MeanPoolClassifier(PooledHead, BertPreTrainedModel):
    """Sequence classifier: ``BertModel`` (no pooler) -> masked mean -> dropout -> ``nn.Linear``
    (``PooledHead``)."""

    config_class = MeanPoolClassifierConfig
    base_model_prefix = "bert"

    def __init__(self, config: MeanPoolClassifierConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config, add_pooling_layer=False)
        _head(self, config)
        self.post_init()

    def encoder_states(self, input_ids, attention_mask, token_type_ids):
        """BERT's last hidden states, (batch, tokens, hidden)."""
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state


class MPNetMeanPoolClassifier(PooledHead, MPNetPreTrainedModel):
    """Sequence classifier: ``MPNetModel`` (no pooler) -> masked mean -> dropout -> ``nn.Linear``
    (``PooledHead``); single texts only. MPNet has no segment embeddings, so ``token_type_ids`` from a
    tokenizer are ignored."""

    config_class = MPNetMeanPoolClassifierConfig
    base_model_prefix = "mpnet"

    def __init__(self, config: MPNetMeanPoolClassifierConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.mpnet = MPNetModel(config, add_pooling_layer=False)
        _head(self, config)
        self.post_init()

    def encoder_states(self, input_ids, attention_mask, token_type_ids):
        """MPNet's last hidden states, (batch, tokens, hidden)."""
        return self.mpnet(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def config_from_backbone(
    backbone_config: PretrainedConfig,
    *,
    labels: list[str],
    backbone: str,
    preprocessing: dict[str, Any] | None = None,
    max_input_tokens: int = 128,
    pooling: str = "mean",
) -> MeanPoolClassifierConfig | MPNetMeanPoolClassifierConfig:
    """A classifier config with the encoder sizes of ``backbone_config`` (BERT or MPNet), the given
    labels and pooling.

    Raises:
        ValueError: an encoder that is neither BERT nor MPNet, or a pooling the encoder cannot do.
    """
    data = backbone_config.to_dict()
    kind = data.get("model_type", "bert")
    for key in (
        "model_type",
        "architectures",
        "_name_or_path",
        "transformers_version",
        "id2label",
        "label2id",
    ):
        data.pop(key, None)
    if kind == "mpnet":
        config_class, architecture = MPNetMeanPoolClassifierConfig, "MPNetMeanPoolClassifier"
    elif kind == "bert":
        config_class, architecture = MeanPoolClassifierConfig, "MeanPoolClassifier"
    else:
        raise ValueError(f"a {kind!r} encoder is not supported; expected a BERT or MPNet backbone")
    return config_class(
        backbone=backbone,
        preprocessing=preprocessing,
        max_input_tokens=max_input_tokens,
        pooling=pooling,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        architectures=[architecture],
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
) -> MeanPoolClassifier | MPNetMeanPoolClassifier:
    """A new classifier whose encoder weights are copied from a BERT or MPNet ``save_pretrained``
    directory (its ``config.json`` says which).

    The head is freshly initialised (seed it with ``torch.manual_seed`` first for determinism);
    ``pooling`` as in ``MeanPoolClassifierConfig``.

    Raises:
        ValueError: another encoder, or ``"pair"`` pooling with MPNet.
    """
    from transformers.utils import logging as hf_logging

    kind = AutoConfig.from_pretrained(str(backbone_path), local_files_only=True).model_type
    encoder_class, model_class = (
        (MPNetModel, MPNetMeanPoolClassifier) if kind == "mpnet" else (BertModel, MeanPoolClassifier)
    )
    if kind not in ("bert", "mpnet"):
        raise ValueError(f"a {kind!r} encoder is not supported; expected a BERT or MPNet backbone")
    # The backbone's pooler weights are deliberately not loaded (mean pooling replaces it); keep the
    # "unexpected keys" report out of the output.
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        encoder = encoder_class.from_pretrained(str(backbone_path), add_pooling_layer=False)
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
    model = model_class(config)
    model.base_model.load_state_dict(encoder.state_dict())
    return model


def parameter_count(model: nn.Module) -> int:
    """Number of scalar parameters (trainable or not) in ``model``."""
    return sum(p.numel() for p in model.parameters())


AutoConfig.register(MODEL_TYPE, MeanPoolClassifierConfig, exist_ok=True)
AutoModelForSequenceClassification.register(MeanPoolClassifierConfig, MeanPoolClassifier, exist_ok=True)
AutoConfig.register(MPNET_MODEL_TYPE, MPNetMeanPoolClassifierConfig, exist_ok=True)
AutoModelForSequenceClassification.register(
    MPNetMeanPoolClassifierConfig, MPNetMeanPoolClassifier, exist_ok=True
)
