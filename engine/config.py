"""The settings the engine reads, handed in from outside: the engine imports no Django.

``settings`` answers attribute reads (``settings.DYNABENCH_INFERENCE_TIMEOUT_SECONDS``, or
``getattr(settings, name, default)``) from the values last given to ``configure``. Until then it holds
``DEFAULTS``, the defaults ``dynabench/settings.py`` documents, so a benchmark or a script can use the
engine without a Django project. The registry app (``models_registry.apps``) configures it from
Django's settings when it starts and again whenever a ``DYNABENCH_*`` setting changes (a test's
``settings`` fixture or ``override_settings``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEFAULTS: dict[str, Any] = {
    "DYNABENCH_BACKBONE_DIR": Path("var") / "backbones",
    "DYNABENCH_ENDPOINT_ALLOWED_NETWORKS": [],
    "DYNABENCH_INFERENCE_TIMEOUT_SECONDS": 20.0,
    "DYNABENCH_INFERENCE_BATCHING": False,
    "DYNABENCH_INFERENCE_BATCH_WINDOW_MS": 2.0,
    "DYNABENCH_INFERENCE_BATCH_MAX": 32,
    "DYNABENCH_MODEL_RUNTIME": "onnx-int8",
    "DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP": 0.005,
    "DYNABENCH_ONNX_INT8_MIN_AGREEMENT": 0.995,
    "DYNABENCH_ONNX_FP32_MIN_AGREEMENT": 1.0,
    "DYNABENCH_ONNX_THREADS": 0,
    "DYNABENCH_ONNX_BULK_WORKERS": 0,
    "DYNABENCH_VECTOR_CACHE_BYTES": 64 * 2**20,
}
"""Each setting the engine reads and its default when nothing was configured."""

PREFIX = "DYNABENCH_"
"""Only settings whose names start with this are taken."""


class EngineSettings:
    """Read-only attribute view of the configured values. A name never configured and without a
    default raises ``AttributeError`` (so ``getattr(settings, name, default)`` works)."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = dict(DEFAULTS)
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def update(self, values: Mapping[str, Any], *, removed: tuple[str, ...] = ()) -> None:
        """Take ``values`` (names not starting with ``PREFIX`` are ignored) and drop ``removed`` back
        to their defaults (or to nothing)."""
        with self._lock:
            fresh = dict(self._values)
            fresh.update({name: value for name, value in values.items() if name.startswith(PREFIX)})
            for name in removed:
                fresh.pop(name, None)
                if name in DEFAULTS:
                    fresh[name] = DEFAULTS[name]
            self._values = fresh


settings = EngineSettings()
"""The engine's settings; read them, configure them with ``configure``."""


def configure(values: Mapping[str, Any], *, removed: tuple[str, ...] = ()) -> None:
    """Hand the engine its settings: every ``DYNABENCH_*`` name of ``values`` is taken as given, the
    names in ``removed`` go back to their defaults. Other names are ignored."""
    settings.update(values, removed=removed)
