"""An OpenAI-compatible endpoint for the registered local generative models (docs/benchmarking.md, "The
OpenAI-compatible endpoint"), so the official ``openai`` client, lm-evaluation-harness or any chat front
end can talk to them:

* ``POST /v1/chat/completions``: one answer as a ``chat.completion`` object, or streamed as server-sent
  ``chat.completion.chunk`` events ending with ``data: [DONE]``;
* ``GET /v1/models`` and ``GET /v1/models/<id>``: the models the caller may use.

Authentication is the user's API token (``Authorization: Bearer <token>``); generation is throttled per
user (``DYNABENCH_OPENAI_RATE``) and queues on the process's generation slots
(``runtime.slots``) like the red-teaming pages. A model is served to a caller who may see it
(``models_registry.selectors.models_visible_to``) when it is a ready local chat model of a red-teaming
task; anything else is the same 404 as an id that does not exist. Errors have OpenAI's shape,
``{"error": {"message", "type", "param", "code"}}`` (``errors.py``).

Modules: ``errors`` (the error shape), ``auth`` (bearer tokens), ``selectors`` (which models, their ids),
``bodies`` (the request body checked into a ``ChatRequest``), ``responses`` (completion objects and the event
stream), ``views`` and ``urls``.
"""
