"""``.env.example`` lists every variable the settings read from the environment (the README sends
operators there for the full list)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_variable_the_settings_read_is_in_env_example():
    settings_source = (ROOT / "dynabench" / "settings.py").read_text(encoding="utf-8")
    # env("X"), env.int("X", ...), env.list(\n    "X", ...): every read goes through django-environ's env.
    read = set(re.findall(r'\benv(?:\.\w+)?\(\s*"([A-Z][A-Z0-9_]+)"', settings_source))
    assert len(read) > 40 and "DYNABENCH_ONNX_INT8_PLANS" in read  # the pattern finds the reads
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert sorted(read - listed) == []
