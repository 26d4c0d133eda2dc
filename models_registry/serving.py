"""The front door to the model engine: everything the other apps use of models, and nothing more.

The engine (``engine/``: loading, inference, batching, generation, remote calls, training recipes,
attributions) knows no Django and no app. The apps never import it: they import this module, which
gives them the registered model's calls (``predict``, ``chat_stream``, ``choose``, ``fits``, ``admit``,
``generate_batch``, ``explain``), the errors those raise, the stream and record types they hand back,
and the few engine helpers an app's job needs (evaluation passes, training recipes). import-linter
holds the rule (``pyproject.toml``: no app but the registry imports ``engine``). Where a local model
and a remote one differ (a fit check, a stream, a choice), the branch is taken behind these functions,
once (``models_registry.generative``, ``models_registry.inference``).

See docs/architecture.md, "The model engine".
"""

from __future__ import annotations

from engine.explain.attributions import REMOTE as NOT_EXPLAINED_REMOTE
from engine.explain.attributions import SPAN as NOT_EXPLAINED_SPAN
from engine.explain.attributions import Explanation
from engine.runtime import onnx_graph, vector_cache
from engine.runtime.backbones import BACKBONES
from engine.runtime.classifier import clear_cache, get_classifier, texts_for_inputs
from engine.runtime.generative import (
    DEFAULT_BATCH_SIZE,
    AnswerStream,
    Decoding,
    Generation,
    PromptTooLong,
    Together,
    Waiting,
    check_messages,
    smollm2_gguf,
)
from engine.runtime.model_files import InferenceError, swap_into_place, without_server_paths
from engine.runtime.outputs import clean_output
from engine.runtime.runtimes import TORCH
from engine.runtime.runtimes import label as runtime_label
from engine.runtime.slots import QueueFull

from . import inference
from .explanations import explain
from .generative import (
    MAX_PRICE_PER_MILLION,
    admit,
    answer_cost,
    chat_stream,
    choose,
    choose_each,
    decoding_of,
    fits,
    generate_batch,
    local_weights_gib,
    prompt_tokens,
)
from .inference import unread_tokens

# Loaded on first use (PEP 562): these modules import torch when they load, and a web process that never
# trains or measures memory must not pay for it (``from models_registry.serving import train_classifier``
# inside the function that trains, as before).
_LAZY = {
    "peak_live_bytes": ("engine.runtime.working_memory", "peak_live_bytes"),
    "TrainingError": ("engine.training.classifier", "TrainingError"),
    "train_classifier": ("engine.training.classifier", "train_classifier"),
    "QA_RECIPES": ("engine.training.qa", "RECIPES"),
    "QAItem": ("engine.training.qa", "QAItem"),
    "train_qa_model": ("engine.training.qa", "train_qa_model"),
}


def predict(model, inputs: list[dict]) -> list[dict]:
    """A registered model's answers to ``inputs`` (``models_registry.inference.predict``: one dict per
    input, local or remote). Looked up at each call, so a test that replaces ``inference.predict`` replaces
    it for every app.

    Raises:
        InferenceError: the model cannot be loaded, fails, or an input lacks a model input field.
    """
    return inference.predict(model, inputs)


def __getattr__(name: str):
    """The names of ``_LAZY``, imported when first asked for; ``AttributeError`` for any other."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


# The names of ``_LAZY`` (below) are given too, on first use.
__all__ = [
    "MAX_PRICE_PER_MILLION",
    # a registered model's calls
    "predict",
    "unread_tokens",
    "chat_stream",
    "choose",
    "choose_each",
    "fits",
    "prompt_tokens",
    "admit",
    "answer_cost",
    "generate_batch",
    "decoding_of",
    "local_weights_gib",
    "explain",
    # errors
    "InferenceError",
    "PromptTooLong",
    "QueueFull",
    # streams and records
    "AnswerStream",
    "Together",
    "Waiting",
    "Generation",
    "Decoding",
    "Explanation",
    "NOT_EXPLAINED_REMOTE",
    "NOT_EXPLAINED_SPAN",
    "DEFAULT_BATCH_SIZE",
    # text in and out
    "check_messages",
    "clean_output",
    "without_server_paths",
    "runtime_label",
    "TORCH",
    # evaluation passes over a model folder (leaderboards)
    "get_classifier",
    "texts_for_inputs",
    "clear_cache",
    "onnx_graph",
    "vector_cache",
    # training recipes and placing their output (the round-to-round loop)
    "BACKBONES",
    "swap_into_place",
    # the demo's weights
    "smollm2_gguf",
]
