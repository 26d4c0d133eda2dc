"""Health check of the open rounds' target models, for ``/health/`` (``core.health``).

A target whose files are gone or incomplete would fail every example written in its round, so the
service is not healthy without them. Only the files are checked (``model_files.check_model_dir``: a
few ``stat`` calls), not a forward pass: the check must stay cheap enough for a load balancer to call
every few seconds. Remote targets (inference endpoints and chat servers) are not called (that would send traffic on every probe);
their failures show as failed predictions instead.
"""

from __future__ import annotations

import dataclasses

from asgiref.sync import sync_to_async
from health_check.base import HealthCheck
from health_check.exceptions import ServiceUnavailable

from engine.runtime.model_files import InferenceError, check_model_dir
from models_registry.runtime_facts import is_remote
from models_registry.selectors import open_round_targets


@dataclasses.dataclass
class TargetModelFiles(HealthCheck):
    """Every open round's local target model has its directory, config, weights and tokenizer.

    Raises:
        ServiceUnavailable: naming each target whose files are unusable (model name and the reason,
            no server path), e.g. ``"hate-speech/r1-target: the model directory does not exist ..."``.
    """

    async def run(self) -> None:
        # Thread-sensitive: the ORM runs on the request's own thread and connection (the library would
        # use a pool thread, which inside a test's transaction would not see the test's rows).
        problems = await sync_to_async(self._problems, thread_sensitive=True)()
        if problems:
            raise ServiceUnavailable("; ".join(problems))

    def _problems(self) -> list[str]:
        problems = []
        for model in open_round_targets():
            if is_remote(model):  # an inference endpoint or a chat server: no files here
                continue
            try:
                check_model_dir(model.path, allow_pickle=model.allow_pickle)
            except InferenceError as exc:
                problems.append(f"{model.task.slug}/{model.name}: {exc}")
        return problems
