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
        {"leaderboards"},
        {"generative_bench"},
        {"crowd"},
        {"validation"},
        {"annotation"},
        {"models_registry"},
        {"tasks"},
        {"accounts"},
        {"core"},
    ]
    assert not any("." in name for layer in _layers() for name in layer)


def test_the_registry_runtime_may_not_import_django_models():
    [contract] = [
        c
        for c in _contracts()
        if c["type"] == "forbidden" and "models_registry.runtime" in c["source_modules"]
    ]
    assert {"models_registry.models", "tasks.models", "accounts.models"} <= set(contract["forbidden_modules"])
    [inner] = [c for c in _contracts() if c.get("containers") == ["models_registry"]]
    assert inner["layers"][-1] == "runtime"


SUB_PACKAGES = ("runtime", "endpoints", "training", "explain")


def _imports_of_the_registry_root(graph) -> list[str]:
    """``importer -> imported`` for each import from a registry sub-package of a module at the registry's
    root (``models_registry.models``, ``services``, ``names``, ...)."""
    below = tuple(f"models_registry.{name}" for name in SUB_PACKAGES)
    found = []
    for importer in sorted(graph.modules):
        if not importer.startswith(tuple(f"{b}." for b in below)) and importer not in below:
            continue
        for imported in graph.find_modules_directly_imported_by(importer):
            inside = imported in below or imported.startswith(tuple(f"{b}." for b in below))
            if imported.startswith("models_registry.") and not inside:
                found.append(f"{importer} -> {imported}")
    return found


def test_no_registry_sub_package_imports_the_registry_root():
    """import-linter's container layers order the sub-packages among themselves but say nothing of the
    root's own modules; this closes that gap. Imports for type hints only (``if TYPE_CHECKING``) are
    left out: ``explain`` names ``RegisteredModel`` in its signatures without importing it at run time."""
    import grimp

    graph = grimp.build_graph("models_registry", exclude_type_checking_imports=True, cache_dir=None)
    assert _imports_of_the_registry_root(graph) == []

    graph.add_import(importer="models_registry.runtime.batching", imported="models_registry.names")
    assert _imports_of_the_registry_root(graph) == [
        "models_registry.runtime.batching -> models_registry.names"
    ]
