"""The import layers of docs/architecture.md cover the whole project package.

import-linter checks only the modules a contract names: a new module directly under ``dynabench/`` that
no layer lists could import any app unnoticed. This test makes such a module fail until it is placed
in the kernel or in the wiring layer of ``pyproject.toml``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [{name.strip() for name in layer.split(":")} for layer in contract["layers"]]


def test_every_module_of_the_project_package_is_in_a_layer():
    package = ROOT / "dynabench"
    modules = {
        f"dynabench.{p.stem if p.is_file() else p.name}"
        for p in package.iterdir()
        if (p.is_file() and p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    listed = set().union(*_layers())
    assert modules - listed == set()
    assert {"dynabench.settings", "core.api", "core.text_rules", "demo.setup"} <= modules


def test_the_apps_are_layered_in_the_documented_order():
    order = [layer for layer in _layers() if len(layer) == 1]
    assert order == [
        {"leaderboards"},
        {"crowd"},
        {"validation"},
        {"annotation"},
        {"models_registry"},
        {"tasks"},
        {"accounts"},
    ]
    kernel, top = _layers()[-1], _layers()[0]
    assert "dynabench.settings" in kernel and "demo.setup" in top
