"""The body of ``POST /v1/chat/completions`` checked into a ``ChatRequest``, or a 400 in OpenAI's shape.

Honoured: ``model``, ``messages`` (roles ``system``, ``developer`` (read as ``system``), ``user``,
``assistant``; content a string or a list of ``{"type": "text", "text": ...}`` parts; the last message the
user's), ``max_completion_tokens`` or ``max_tokens``, ``temperature``, ``top_p``, ``stop``, ``seed``,
``stream`` and ``stream_options.include_usage``. Unset ones keep the model's stored settings
(``generative.decoding_of``).

Accepted when they ask for nothing this server would do differently (``n`` 1, ``logprobs`` false, no
tools, penalties 0, ``response_format`` text, ...; ``IGNORED``) and otherwise refused with code
``unsupported_parameter``, as are images, tool messages and tool calls. A field OpenAI does not know
is refused with code ``unknown_parameter``, as OpenAI does: a misspelt ``max_token`` is not silently
dropped. Text is passed to the model as sent (no newline normalisation: a benchmark's prompt is
exact); lone surrogates never reach here (the JSON parser refuses them, ``core.api.parsers``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from engine.runtime.generative import Decoding

from .errors import OpenAIError, invalid

#: The largest answer a request may ask for, in tokens (``Decoding.max_new_tokens``'s bound).
MAX_TOKENS = 4096
#: ``seed``'s range: what ``torch.manual_seed`` accepts.
SEED_RANGE = (-(2**63), 2**64 - 1)
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
SUPPORTED = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "stop",
        "seed",
        "stream",
        "stream_options",
    }
)
_ANY = object()
#: OpenAI fields accepted with these values only (``_ANY``: any value, ignored): they ask for nothing
#: this server would do differently.
IGNORED: dict[str, tuple] = {
    "n": (None, 1),
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "presence_penalty": (None, 0),
    "frequency_penalty": (None, 0),
    "logit_bias": (None, {}),
    "tools": (None, []),
    "tool_choice": (None, "none"),
    "parallel_tool_calls": (_ANY,),
    "functions": (None, []),
    "function_call": (None, "none"),
    "response_format": (None, {"type": "text"}),
    "modalities": (None, ["text"]),
    "audio": (None,),
    "prediction": (None,),
    "web_search_options": (None,),
    "reasoning_effort": (None,),
    "verbosity": (None,),
    "store": (None, False),
    "service_tier": (_ANY,),
    "metadata": (_ANY,),
    "user": (_ANY,),
    "safety_identifier": (_ANY,),
    "prompt_cache_key": (_ANY,),
}
MESSAGE_KEYS = frozenset({"role", "content", "name"})
#: Message fields of tool use: refused unless empty.
MESSAGE_TOOL_KEYS = frozenset({"tool_calls", "function_call", "tool_call_id", "audio", "refusal"})


@dataclass(frozen=True)
class ChatRequest:
    """A checked chat-completion request.

    ``messages`` is ``[{"role", "content"}]`` (roles system, user, assistant; the last the user's);
    ``overrides`` the ``Decoding`` fields the request sets (the rest keep the model's stored settings).
    """

    model: str
    messages: list[dict]
    overrides: dict
    stream: bool = False
    include_usage: bool = False

    def decoding(self, stored: Decoding) -> Decoding:
        """``stored`` with the request's settings in place of its own.

        Raises:
            OpenAIError: 400 when the two together are out of range (cannot happen for checked fields).
        """
        try:
            return dataclasses.replace(stored, **self.overrides)
        except ValueError as exc:
            raise invalid(str(exc)) from None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    # An int is finite (math.isfinite would overflow on 10**400); a float may be inf or nan.
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


def _same(given, allowed) -> bool:
    """``given == allowed``, except that a boolean equals only a boolean (``n: true`` is not ``n: 1``)."""
    if isinstance(given, bool) or isinstance(allowed, bool):
        return given is allowed
    return given == allowed


def _type_error(param: str, expected: str, value) -> OpenAIError:
    got = {bool: "a boolean", str: "a string", list: "an array", dict: "an object", type(None): "null"}.get(
        type(value), "a number"
    )
    return invalid(
        f"Invalid type for '{param}': expected {expected}, but got {got} instead.",
        param=param,
        code="invalid_type",
    )


def _unsupported(param: str, what: str) -> OpenAIError:
    return invalid(f"{what} is not supported by this server.", param=param, code="unsupported_parameter")


def _content(value, param: str) -> str:
    """A message's text: a string, or the text parts of a list joined."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _type_error(param, "a string or an array of text parts", value)
    texts = []
    for index, part in enumerate(value):
        where = f"{param}[{index}]"
        if not isinstance(part, dict):
            raise _type_error(where, "an object", part)
        if part.get("type") != "text":
            raise _unsupported(f"{where}.type", f"Content of type {str(part.get('type'))[:40]!r}")
        if not isinstance(part.get("text"), str):
            raise _type_error(f"{where}.text", "a string", part.get("text"))
        texts.append(part["text"])
    return "".join(texts)


def _messages(value) -> list[dict]:
    if not isinstance(value, list):
        raise _type_error("messages", "an array", value)
    if not value:
        raise invalid("'messages' must hold at least one message.", param="messages")
    clean = []
    for index, message in enumerate(value):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise _type_error(where, "an object", message)
        for key in sorted(set(message) - MESSAGE_KEYS):
            if key in MESSAGE_TOOL_KEYS:
                if message[key] in (None, [], ""):
                    continue
                raise _unsupported(f"{where}.{key}", "Tool use")
            raise invalid(
                f"Unrecognized request argument supplied: {where}.{key[:60]}",
                param=f"{where}.{key[:60]}",
                code="unknown_parameter",
            )
        role = message.get("role")
        if role in ("tool", "function"):
            raise _unsupported(f"{where}.role", f"The role {role!r} (tool use)")
        if role not in ROLES:
            shown = repr(role)[:60]
            raise invalid(
                f"Invalid value for '{where}.role': {shown}; supported roles are system, developer, user "
                "and assistant.",
                param=f"{where}.role",
            )
        if "content" not in message or message["content"] is None:
            raise invalid(f"Missing required parameter: '{where}.content'.", param=f"{where}.content")
        clean.append({"role": ROLES[role], "content": _content(message["content"], f"{where}.content")})
    if clean[-1]["role"] != "user":
        raise invalid(
            "The last message must be the user's: the model answers it (no assistant prefill).",
            param=f"messages[{len(clean) - 1}].role",
        )
    return clean


def _max_tokens(body: dict) -> int | None:
    given = {k: body[k] for k in ("max_completion_tokens", "max_tokens") if body.get(k) is not None}
    if len(set(map(repr, given.values()))) > 1:
        raise invalid(
            "Give 'max_completion_tokens' or 'max_tokens', not both with different values.",
            param="max_tokens",
        )
    for param, value in given.items():
        if not _is_int(value):
            raise _type_error(param, "an integer", value)
        if not 1 <= value <= MAX_TOKENS:
            raise invalid(
                f"Invalid '{param}': {value} is outside [1, {MAX_TOKENS:,}], the most this server generates.",
                param=param,
            )
        return value
    return None


def _stop(value) -> tuple[str, ...]:
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise _type_error("stop", "a string or an array of strings", value)
    if len(stops) > 4 or any(not s for s in stops):
        raise invalid("'stop' holds at most 4 sequences, none empty.", param="stop")
    return tuple(stops)


def _sampling(body: dict) -> dict:
    overrides: dict = {}
    temperature, top_p, seed = body.get("temperature"), body.get("top_p"), body.get("seed")
    if temperature is not None:
        if not _is_number(temperature):
            raise _type_error("temperature", "a number", temperature)
        if not 0 <= temperature <= 2:
            raise invalid(f"Invalid 'temperature': {temperature} is outside [0, 2].", param="temperature")
        overrides["temperature"] = float(temperature)
    if top_p is not None:
        if not _is_number(top_p):
            raise _type_error("top_p", "a number", top_p)
        if not 0 <= top_p <= 1:
            raise invalid(f"Invalid 'top_p': {top_p} is outside [0, 1].", param="top_p")
        if top_p == 0:  # the nucleus of the likeliest token alone: greedy decoding
            overrides["temperature"] = 0.0
        else:
            overrides["top_p"] = float(top_p)
    if seed is not None:
        if not _is_int(seed):
            raise _type_error("seed", "an integer", seed)
        if not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
            raise invalid("Invalid 'seed': it must fit in 64 bits.", param="seed")
        overrides["seed"] = seed
    return overrides


def _stream(body: dict) -> tuple[bool, bool]:
    stream, options = body.get("stream"), body.get("stream_options")
    if stream is not None and not isinstance(stream, bool):
        raise _type_error("stream", "a boolean", stream)
    if options is None:
        return bool(stream), False
    if not stream:
        raise invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            param="stream_options",
        )
    if not isinstance(options, dict):
        raise _type_error("stream_options", "an object", options)
    unknown = sorted(set(options) - {"include_usage", "include_obfuscation"})
    if unknown:
        raise invalid(
            f"Unrecognized request argument supplied: stream_options.{unknown[0][:60]}",
            param="stream_options",
            code="unknown_parameter",
        )
    usage = options.get("include_usage")
    if usage is not None and not isinstance(usage, bool):
        raise _type_error("stream_options.include_usage", "a boolean", usage)
    return True, bool(usage)


def parse_chat_request(body) -> ChatRequest:
    """``body`` (the parsed JSON) as a ``ChatRequest``.

    Raises:
        OpenAIError: 400 naming the field at fault (``param``), with code ``unknown_parameter``,
            ``unsupported_parameter``, ``invalid_type`` or ``invalid_value``; the first fault found
            (unknown fields first, then model, messages, the decoding fields, streaming).
    """
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object.", code="invalid_type")
    for key in sorted(set(body) - SUPPORTED):
        if key not in IGNORED:
            raise invalid(
                f"Unrecognized request argument supplied: {key[:60]}",
                param=key[:60],
                code="unknown_parameter",
            )
        allowed = IGNORED[key]
        if allowed != (_ANY,) and not any(_same(body[key], value) for value in allowed):
            raise _unsupported(key, f"'{key}' = {str(body[key])[:60]}")
    model = body.get("model")
    if model is None:
        raise invalid(
            "Missing required parameter: 'model'.", param="model", code="missing_required_parameter"
        )
    if not isinstance(model, str):
        raise _type_error("model", "a string", model)
    if "messages" not in body:
        raise invalid(
            "Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter"
        )
    messages = _messages(body["messages"])
    overrides = _sampling(body)
    max_tokens = _max_tokens(body)
    if max_tokens is not None:
        overrides["max_new_tokens"] = max_tokens
    if body.get("stop") is not None:
        overrides["stop"] = _stop(body["stop"])
    stream, include_usage = _stream(body)
    return ChatRequest(
        model=model, messages=messages, overrides=overrides, stream=stream, include_usage=include_usage
    )
