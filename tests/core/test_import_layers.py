"""The import layers of docs/architecture.md name whole packages, and every package of the project is in one.

import-linter checks only the packages a contract names: a new top-level package that no layer lists could
import any app unnoticed. This test makes such a package fail until it is placed in a layer of
``pyproject.toml``. The layers hold whole packages (no module list), so a folder's place in the order is
its layer.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Top-level folders that are no part of the running platform (nothing imports them).
OUTSIDE = {"tests", "benchmarks", "scripts", "docs", "node_modules", "artifacts", "var"}


def _contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def _layers() -> list[set[str]]:
    [contract] = [c for c in _contracts() if c["type"] == "layers" and "containers" not in c]
    return [{name.strip() for name in layer.replace(":", "|").split("|")} for layer in contract["layers"]]


def test_every_package_of_the_project_is_in_a_layer():
    packages = {
        p.name
        for p in ROOT.iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and p.name not in OUTSIDE
    }
    listed = set().union(*_layers())
    assert packages == listed


def test_the_layers_name_whole_packages_in_the_documented_order():
    assert _layers() == [
        {"dynabench", "demo"},
        {"cycle"},
        {"leaderboards"},
        {"generative_bench"},
        {"crowd"},
        {"validation"},
        {"annotation"},
        {"models_registry"},
        {"tasks"},
        {"accounts"},
        {"engine"},
        {"core"},
    ]
    assert not any("." in name for layer in _layers() for name in layer)


APPS = {"accounts", "tasks", "models_registry", "annotation", "validation", "crowd", "generative_bench"}
APPS |= {"leaderboards", "cycle", "dynabench", "demo"}


def test_the_engine_imports_no_django_and_no_app_by_whole_packages():
    [contract] = [c for c in _contracts() if c["type"] == "forbidden" and c["source_modules"] == ["engine"]]
    assert {"django"} | APPS <= set(contract["forbidden_modules"])
    # Indirect imports count: the engine may not reach Django through the kernel either.
    assert not contract.get("allow_indirect_imports", False)
    [inner] = [c for c in _contracts() if c.get("containers") == ["engine"]]
    assert inner["layers"][-1] == "runtime"


def test_apps_reach_the_engine_only_through_the_front_door():
    [contract] = [
        c for c in _contracts() if c["type"] == "forbidden" and c["forbidden_modules"] == ["engine"]
    ]
    everything = set().union(*_layers())
    assert set(contract["source_modules"]) == everything - {"engine", "models_registry"}


def test_no_contract_lists_modules():
    """Every contract names whole packages: a list of modules would miss the next module written."""
    ours = set().union(*_layers())
    for contract in _contracts():
        for key in ("source_modules", "forbidden_modules", "containers", "ancestors"):
            for name in contract.get(key, []):
                if name.split(".")[0] in ours:
                    assert "." not in name, (contract["name"], name)


def test_the_front_door_is_the_only_module_of_other_apps_that_names_the_engine():
    """``models_registry.serving`` imports the engine; no module of another app does, not even lazily
    inside a function (import-linter sees those too; this reads the source to say where)."""
    import re

    pattern = re.compile(r"^\s*(from|import)\s+engine\b", re.M)
    found = []
    for app in sorted(APPS - {"models_registry"}) + ["core"]:
        for path in sorted((ROOT / app).rglob("*.py")):
            if pattern.search(path.read_text(encoding="utf-8")):
                found.append(str(path.relative_to(ROOT)))
    assert found == []
