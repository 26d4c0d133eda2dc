"""Generative models in the registry: register, check and serve the chat models of red-teaming tasks
(docs/generative.md).

A local model is a ``save_pretrained`` folder or a GGUF file (converted once, by its check, into a folder
under ``DYNABENCH_MODEL_DIR``); a remote one is a model on an OpenAI-compatible chat server, with the API
key read at call time from an environment variable or a file the operator names, never stored.

    register_local_chat_model(task=..., name=..., path=".../model.gguf", settings={"max_new_tokens": 256})
    register_chat_endpoint_model(task=..., name=..., base_url="https://host/v1", chat_model_name="m",
                                 api_key_env="HOST_API_KEY")
    chat_stream(model, messages)   # pieces as they come; .generation once ended
    generate_batch(model, [messages, ...])   # whole answers, a local model's batched (replay)

Registration queues the model's check (``jobs.check_model``, which calls ``run_generative_check`` for a
red-teaming task): one short answer to a probe message, so an owner learns at once that a key is wrong
(401) or a folder is not a chat model.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

from django.conf import settings as django_settings

from engine.endpoints.chat import (
    RemoteChat,
    RemoteChatStream,
    choose_remote,
    read_api_key,
    stream_remote,
)
from engine.runtime.generative import (
    DEFAULT_BATCH_SIZE,
    ChatStream,
    ChoiceScores,
    Decoding,
    Generation,
    convert_gguf,
    get_chat_model,
)
from engine.runtime.model_files import InferenceError, without_server_paths
from engine.runtime.slots import GENERATION_SLOTS
from models_registry.kinds import chat_models
from models_registry.models import RegisteredModel
from models_registry.services import (
    MAX_ERROR,
    ModelRegistryError,
    _create_model,
    checked_endpoint_url,
    new_model_dir,
    request_check,
)
from tasks.models import Task

#: What the check asks a generative model (a short answer, ``PROBE_TOKENS`` at most).
PROBE_MESSAGES = [{"role": "user", "content": "Say hello."}]
PROBE_TOKENS = 8
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_DECODING_KEYS = ("temperature", "top_p", "max_new_tokens", "stop", "seed")
_PRICE_KEYS = ("price_input_per_million", "price_output_per_million")
_SETTINGS_KEYS = (*_DECODING_KEYS, "system_prompt", "timeout", *_PRICE_KEYS)
#: The highest price per million tokens taken: one unit of the currency a token. A round's charges are
#: stored with 8 whole digits (``BudgetCharge``), and a price of 1e300 made every budgeted turn fail on
#: its arithmetic; no provider's price comes near this one, in any currency.
MAX_PRICE_PER_MILLION = 1_000_000.0


def _decoding_from(values: dict) -> Decoding:
    """The ``Decoding`` of the decoding keys of ``values`` that are set (None counts as unset)."""
    return Decoding(**{k: values[k] for k in _DECODING_KEYS if values.get(k) is not None})


def clean_generation_settings(raw: dict | None) -> dict:
    """A generative model's settings checked and normalised, as stored in ``RegisteredModel.generation``.

    Keys (all optional): ``system_prompt`` (str, at most 10,000 characters), ``temperature``, ``top_p``,
    ``max_new_tokens``, ``stop``, ``seed`` (as ``runtime.generative.Decoding``), ``timeout`` (seconds,
    (0, 600], default 60) and ``price_input_per_million`` / ``price_output_per_million`` (0 to
    ``MAX_PRICE_PER_MILLION``, any currency, per million tokens; a number or its text, not true or false).

    Raises:
        ModelRegistryError: an unknown key or a value out of range, named.
    """
    raw = dict(raw or {})
    unknown = sorted(set(raw) - set(_SETTINGS_KEYS))
    if unknown:
        raise ModelRegistryError(f"unknown generation settings: {', '.join(unknown)}")
    clean: dict = {}
    try:
        decoding = _decoding_from(raw)
    except (TypeError, ValueError) as exc:
        raise ModelRegistryError(f"generation settings: {exc}") from None
    clean.update(decoding.as_dict())
    prompt = raw.get("system_prompt") or ""
    if not isinstance(prompt, str) or len(prompt) > 10_000:
        raise ModelRegistryError(
            "generation settings: system_prompt must be text of at most 10,000 characters"
        )
    clean["system_prompt"] = prompt
    try:
        if any(isinstance(raw.get(k), bool) for k in ("timeout", *_PRICE_KEYS)):
            raise TypeError("true or false is not a number")  # float(True) would be 1.0
        timeout = DEFAULT_TIMEOUT if raw.get("timeout") in (None, "") else float(raw["timeout"])
        prices = {k: (None if raw.get(k) in (None, "") else float(raw[k])) for k in _PRICE_KEYS}
    except (TypeError, ValueError):
        raise ModelRegistryError("generation settings: timeout and prices must be numbers") from None
    if not all(math.isfinite(v) for v in [timeout, *(p for p in prices.values() if p is not None)]):
        raise ModelRegistryError("generation settings: timeout and prices must be finite numbers")
    if not 0 < timeout <= MAX_TIMEOUT:
        raise ModelRegistryError(
            f"generation settings: timeout must be above 0 and at most {MAX_TIMEOUT:.0f} s"
        )
    if any(p is not None and p < 0 for p in prices.values()):
        raise ModelRegistryError("generation settings: prices cannot be negative")
    if any(p is not None and p > MAX_PRICE_PER_MILLION for p in prices.values()):
        raise ModelRegistryError(
            f"generation settings: prices can be at most {MAX_PRICE_PER_MILLION:,.0f} per million tokens "
            "(one unit of the currency a token)"
        )
    clean.update(timeout=timeout, **prices)
    return clean


def decoding_of(model: RegisteredModel) -> Decoding:
    """The model's stored decoding settings."""
    return _decoding_from(model.generation or {})


def _timeout_of(model: RegisteredModel) -> float:
    """The model's stored timeout for a whole answer, in seconds."""
    return float((model.generation or {}).get("timeout") or DEFAULT_TIMEOUT)


def remote_chat_of(model: RegisteredModel) -> RemoteChat:
    """The ``RemoteChat`` of a chat-endpoint model (its key is read only when it is called)."""
    stored = model.generation or {}
    return RemoteChat(
        base_url=model.endpoint_url,
        model=model.chat_model_name,
        system_prompt=stored.get("system_prompt", ""),
        decoding=decoding_of(model),
        timeout=_timeout_of(model),
        api_key_env=model.api_key_env,
        api_key_file=model.api_key_file,
        price_input_per_million=stored.get("price_input_per_million"),
        price_output_per_million=stored.get("price_output_per_million"),
        name=model.name,
    )


def with_system_prompt(model: RegisteredModel, messages: list[dict]) -> list[dict]:
    """``messages`` with ``model``'s stored system prompt first: as the system message, or before the
    conversation's own system message (a red-teaming context), separated by a blank line."""
    prompt = (model.generation or {}).get("system_prompt") or ""
    if not prompt or not messages:
        return list(messages)
    if messages[0].get("role") == "system":
        return [{"role": "system", "content": f"{prompt}\n\n{messages[0]['content']}"}, *messages[1:]]
    return [{"role": "system", "content": prompt}, *messages]


def chat_stream(
    model: RegisteredModel, messages: list[dict], decoding: Decoding | None = None
) -> ChatStream | RemoteChatStream:
    """Ask a generative model to answer ``messages``, streaming (the runner's own stream: iterate for
    the pieces, ``.generation`` once ended), with its stored decoding settings unless ``decoding``
    replaces them.

    A local model gets the stored system prompt first (``with_system_prompt``); a remote one is sent it
    by ``stream_remote``.

    Raises:
        InferenceError: the model is not a generative model of a red-teaming task, or as the runners
            raise (``runtime.generative.LocalChatModel.stream``, ``endpoints.chat.stream_remote``).
    """
    if not chat_models(model.task.cfg):
        raise InferenceError(f"{model.name} is not a generative model")
    decoding = decoding or decoding_of(model)
    if model.source == RegisteredModel.Source.CHAT_ENDPOINT:
        return stream_remote(dataclasses.replace(remote_chat_of(model), decoding=decoding), messages)
    messages = with_system_prompt(model, messages)
    chat = get_chat_model(model.path, name=model.name)
    return chat.stream(messages, decoding, timeout=_timeout_of(model), name=model.name)


def fits(model: RegisteredModel, messages: list[dict]) -> None:
    """Refuse ``messages`` (chat messages, the system prompt not yet added) that the local chat ``model``
    cannot read with room for its answer (``decoding_of(model).max_new_tokens`` new tokens). A remote
    model is not checked here: its server says so itself, and the call then fails.

    Raises:
        PromptTooLong: the prompt's tokens and the answer's room exceed the model's context window.
        InferenceError: the model's files cannot be loaded.
    """
    if model.source == RegisteredModel.Source.CHAT_ENDPOINT:
        return
    chat = get_chat_model(model.path, name=model.name)
    chat.check_fits(chat.count_tokens(messages), decoding_of(model).max_new_tokens)


def prompt_tokens(model: RegisteredModel, messages: list[dict]) -> int | None:
    """The tokens the local chat ``model`` reads for ``messages`` (its stored system prompt added, its
    chat template applied, as ``chat_stream`` sends them); None for a remote model, whose tokenizer is
    not here.

    Raises:
        InferenceError: the model's files cannot be loaded.
    """
    if model.source == RegisteredModel.Source.CHAT_ENDPOINT:
        return None
    chat = get_chat_model(model.path, name=model.name)
    return chat.count_tokens(with_system_prompt(model, messages))


def admit(*models: RegisteredModel, who: object = None) -> None:
    """Refuse now, before the caller stores anything, a request whose answers from ``models`` (one each)
    would wait for a generation slot in a full line (``runtime.slots``): the calling thread is promised a
    place in line for each local one (``GenerationSlots.admit``), all or none, taken by its next
    generations. A remote model's server keeps its own line. ``who`` (a user's id) is who asks: refused,
    its places are kept for its return, ahead of anyone refused after it and of newcomers.

    Raises:
        QueueFull: the line of this process has no room for them all (answered 503 by
            ``models_registry.queue_full``).
    """
    local = sum(1 for model in models if model.source != RegisteredModel.Source.CHAT_ENDPOINT)
    if local:
        GENERATION_SLOTS.admit(local, who)


def answer_cost(model: RegisteredModel, generation: Generation) -> float | None:
    """An answer's cost at the model's prices per million tokens (input and output), as
    ``RemoteChat.cost`` computes a remote one's; None without both prices or counts."""
    stored = model.generation or {}
    prices = (stored.get("price_input_per_million"), stored.get("price_output_per_million"))
    counts = (generation.input_tokens, generation.output_tokens)
    if None in prices or None in counts:
        return None
    return (counts[0] * prices[0] + counts[1] * prices[1]) / 1_000_000


def generate_batch(
    model: RegisteredModel,
    conversations: list[list[dict]],
    decoding: Decoding | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> list[Generation]:
    """``model``'s whole answers to many conversations, one ``Generation`` each in the order given, with
    its stored decoding settings unless ``decoding`` replaces them (docs/benchmarking.md, "Replay").

    * A local model answers ``batch_size`` conversations per left-padded ``generate``
      (``runtime.generative.LocalChatModel.generate_batch``: greedy output as ``chat_stream`` gives it
      alone, the generation slot held one batch at a time; its docstring says what the times mean in a
      batch), each with the stored system prompt first (``with_system_prompt``); its ``cost`` at the
      model's prices, when it has them.
    * A remote model answers them one by one through ``endpoints.chat.stream_remote``, the path of every
      remote answer: a 429 or a 5xx is retried ``endpoints.chat.MAX_RETRIES`` times by the openai
      client, after the server's ``retry-after`` (or ``retry-after-ms``) when it gives one, else after
      its exponential backoff (0.5 s doubling, at most 8 s); a ``retry-after`` over 120 s is not waited
      for (the answer fails, and its caller may try it again later).

    A conversation that fails (malformed, too long for the context, a refused request, a server error
    after the retries) gets a ``Generation`` with finish reason ``error``, no text and ``error`` saying
    why; the others are answered all the same.

    Raises:
        InferenceError: the model is not a generative model of a red-teaming task.
        ValueError: ``batch_size`` below 1.
    """
    if not chat_models(model.task.cfg):
        raise InferenceError(f"{model.name} is not a generative model")
    decoding = decoding or decoding_of(model)
    if model.source == RegisteredModel.Source.CHAT_ENDPOINT:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        remote = dataclasses.replace(remote_chat_of(model), decoding=decoding)
        answers = []
        for messages in conversations:
            try:
                answers.append(stream_remote(remote, messages).drain())
            except InferenceError as exc:  # EndpointAddressRefused included
                answers.append(
                    Generation(
                        text="",
                        finish_reason="error",
                        model=model.name,
                        decoding=decoding.as_dict(),
                        error=str(exc),
                    )
                )
        return answers
    chat = get_chat_model(model.path, name=model.name)
    generations = chat.generate_batch(
        [with_system_prompt(model, list(messages)) for messages in conversations],
        decoding,
        batch_size=batch_size,
        timeout=_timeout_of(model),
    )
    for generation in generations:
        generation.cost = answer_cost(model, generation)
        # The loaded weights are shared by every registration of one folder (cached by path), so the
        # record names the registered model asked, not the first one that loaded them.
        generation.model = model.name
    return generations


def choose(model: RegisteredModel, messages: list[dict], options: list[str]) -> ChoiceScores:
    """Which of ``options`` ``model`` picks as its answer to ``messages`` (a multiple-choice item;
    docs/generative.md, "Multiple choice"): a local model by each option's log-likelihood after the
    prompt, normalised per UTF-8 byte (``LocalChatModel.choose``); a remote one by a constrained answer
    letter (``endpoints.chat.choose_remote``).

    Returns:
        ``ChoiceScores`` (``picked`` is the index into ``options``).

    Raises:
        InferenceError: not a generative model of a red-teaming task, fewer than two options, or as the
            runners raise; ``PromptTooLong`` (an ``InferenceError``) for a local model's context.
    """
    return choose_each(model, [(messages, options)])[0]


def choose_each(model: RegisteredModel, items: list[tuple[list[dict], list[str]]]) -> list[ChoiceScores]:
    """``choose`` for each ``(messages, options)`` item, in order. A local model reads the tokens that
    every item's prompt starts with once (``LocalChatModel.choose_each``: a judge's questions about one
    answer share the answer); a remote one is asked item by item. Same errors as ``choose``."""
    if not chat_models(model.task.cfg):
        raise InferenceError(f"{model.name} is not a generative model")
    if model.source == RegisteredModel.Source.CHAT_ENDPOINT:
        return [choose_remote(remote_chat_of(model), messages, options) for messages, options in items]
    local = get_chat_model(model.path, name=model.name)
    return local.choose_each([(with_system_prompt(model, messages), options) for messages, options in items])


def local_weights_gib(model: RegisteredModel) -> float | None:
    """A local generative model's weights in GiB (the bytes of its parameters and buffers, as loaded:
    float32 after a GGUF's conversion); None for a remote model, whose memory is not measured here.

    Raises:
        InferenceError: the model cannot be loaded.
    """
    if model.source == RegisteredModel.Source.CHAT_ENDPOINT:
        return None
    torch_model = get_chat_model(model.path, name=model.name).model
    tensors = [*torch_model.parameters(), *torch_model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors) / 2**30


def _red_team_task(task: Task) -> None:
    if not chat_models(task.cfg):
        raise ModelRegistryError(f"task {task.slug} is not a red-teaming task; its models are classifiers")


def register_local_chat_model(
    *, task: Task, name: str, path: str, owner=None, settings: dict | None = None, card: dict | None = None
) -> RegisteredModel:
    """Register the causal LM at ``path`` (a ``save_pretrained`` folder, or a ``.gguf`` file) as model
    ``name`` of the red-teaming ``task``, and queue its check.

    Raises:
        ModelRegistryError: not a red-teaming task, no such folder or file, bad settings, or the name is
            taken.
    """
    _red_team_task(task)
    source = Path(path or "")
    if not (source.is_dir() or (source.is_file() and source.suffix == ".gguf")):
        raise ModelRegistryError("give a save_pretrained folder or a .gguf file on this server")
    generation = clean_generation_settings(settings)
    model = _create_model(
        task=task,
        name=name,
        owner=owner,
        source=RegisteredModel.Source.LOCAL_DIR,
        card=card,
        path=str(source),
        generation=generation,
    )
    request_check(model)
    return model


def register_chat_endpoint_model(
    *,
    task: Task,
    name: str,
    base_url: str,
    chat_model_name: str,
    api_key_env: str = "",
    api_key_file: str = "",
    owner=None,
    settings: dict | None = None,
    card: dict | None = None,
) -> RegisteredModel:
    """Register model ``chat_model_name`` on the OpenAI-compatible server at ``base_url`` (up to ``/v1``)
    as model ``name`` of the red-teaming ``task``, and queue its check.

    The API key is named, never given: ``api_key_env`` (an environment variable of the server's
    processes) or ``api_key_file`` (a file on the server), at most one; neither for a server without
    keys.

    Raises:
        ModelRegistryError: not a red-teaming task, a URL that is not http(s) or breaks the endpoint rule,
            no model name, both or a malformed key source, bad settings, or the name is taken.
    """
    _red_team_task(task)
    base_url = checked_endpoint_url((base_url or "").strip().rstrip("/"))
    chat_model_name = (chat_model_name or "").strip()
    if not chat_model_name or len(chat_model_name) > 200:
        raise ModelRegistryError("give the model name the chat server expects (at most 200 characters)")
    if api_key_env and api_key_file:
        raise ModelRegistryError("name the API key's environment variable or its file, not both")
    if api_key_env and not _ENV_NAME.match(api_key_env):
        raise ModelRegistryError("the API key variable must be a name such as OPENAI_API_KEY")
    generation = clean_generation_settings(settings)
    model = _create_model(
        task=task,
        name=name,
        owner=owner,
        source=RegisteredModel.Source.CHAT_ENDPOINT,
        card=card,
        endpoint_url=base_url,
        chat_model_name=chat_model_name,
        api_key_env=api_key_env,
        api_key_file=api_key_file,
        generation=generation,
    )
    request_check(model)
    return model


def run_generative_check(model: RegisteredModel) -> tuple[str, str]:
    """Check a generative model and store the outcome (``jobs.check_model`` calls it for red-teaming
    tasks): a GGUF is converted into a folder under the model directory first (``model.path`` then
    names the folder, the card ``converted_from`` the file's name); then one short answer to
    ``PROBE_MESSAGES``. A local model's parameter count is counted from its weights.

    Returns:
        ``("ready", "")`` or ``("failed", "<why>")``, as stored.
    """
    updates: dict = {}
    error = ""
    card = dict(model.card)
    try:
        if model.source == RegisteredModel.Source.CHAT_ENDPOINT:
            read_api_key(model.api_key_env, model.api_key_file)  # a missing key says so before any call
        elif model.path.endswith(".gguf"):
            folder = convert_gguf(model.path, new_model_dir(model.task))
            card["converted_from"] = Path(model.path).name
            model.path = updates["path"] = str(folder)
        probe = chat_stream(model, PROBE_MESSAGES, Decoding(max_new_tokens=PROBE_TOKENS)).drain()
        if probe.finish_reason in ("error", "timeout"):
            error = f"probe message failed: {probe.error or probe.finish_reason}"
        if model.source != RegisteredModel.Source.CHAT_ENDPOINT:
            chat = get_chat_model(model.path, name=model.name)
            updates["parameter_count"] = card["parameter_count"] = sum(
                p.numel() for p in chat.model.parameters()
            )
            card["context_tokens"] = chat.context_limit
    except InferenceError as exc:
        error = f"probe message failed: {exc}"
    status = RegisteredModel.Status.FAILED if error else RegisteredModel.Status.READY
    error = without_server_paths(error, django_settings.DYNABENCH_MODEL_DIR)[:MAX_ERROR]
    updates.update(card=card, status=status, error_message=error, recheck=RegisteredModel.Recheck.NONE)
    for key, value in updates.items():
        setattr(model, key, value)
    model.save(update_fields=[*updates, "updated_at"])
    return status, error
