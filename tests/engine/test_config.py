"""The engine's settings (engine/config.py): handed in by the registry app, followed when a setting
changes, back to the default when an override ends, and never a Django import."""

from __future__ import annotations

import subprocess
import sys

from django.conf import settings as django_settings
from django.test import override_settings

from engine import config
from engine.runtime import batching


def test_the_engine_reads_the_projects_settings(settings):
    assert (
        config.settings.DYNABENCH_INFERENCE_TIMEOUT_SECONDS
        == django_settings.DYNABENCH_INFERENCE_TIMEOUT_SECONDS
    )
    settings.DYNABENCH_INFERENCE_BATCH_MAX = 7
    assert config.settings.DYNABENCH_INFERENCE_BATCH_MAX == 7
    assert batching.batch_max() == 7


def test_an_override_ends_and_the_engine_follows():
    before = config.settings.DYNABENCH_VECTOR_CACHE_BYTES
    with override_settings(DYNABENCH_VECTOR_CACHE_BYTES=1234):
        assert config.settings.DYNABENCH_VECTOR_CACHE_BYTES == 1234
    assert config.settings.DYNABENCH_VECTOR_CACHE_BYTES == before


def test_a_setting_the_project_never_had_falls_back_to_the_default_or_to_nothing():
    with override_settings(DYNABENCH_ONNX_NOT_A_SETTING=3):
        assert config.settings.DYNABENCH_ONNX_NOT_A_SETTING == 3
    assert getattr(config.settings, "DYNABENCH_ONNX_NOT_A_SETTING", "absent") == "absent"
    config.configure({}, removed=("DYNABENCH_INFERENCE_BATCH_MAX",))
    try:
        assert config.settings.DYNABENCH_INFERENCE_BATCH_MAX == 32  # DEFAULTS
    finally:
        config.configure({"DYNABENCH_INFERENCE_BATCH_MAX": django_settings.DYNABENCH_INFERENCE_BATCH_MAX})


def test_other_names_are_not_taken():
    config.configure({"SECRET_KEY": "x", "DEBUG": True})
    assert getattr(config.settings, "SECRET_KEY", None) is None


def test_the_engine_loads_without_django():
    """A fresh interpreter imports the engine's modules that serve models and never imports Django."""
    code = (
        "import sys\n"
        "import engine.runtime.generative, engine.runtime.classifier, engine.runtime.batching\n"
        "import engine.endpoints.chat, engine.explain.attributions, engine.config\n"
        "assert engine.config.settings.DYNABENCH_INFERENCE_BATCH_MAX == 32\n"
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
