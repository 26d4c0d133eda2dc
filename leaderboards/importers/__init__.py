"""Importers for datasets models are scored on (static test suites) and where their data comes from."""

from .static_sets import STATIC_SETS, StaticSet, import_static_set, import_static_sets

__all__ = ["STATIC_SETS", "StaticSet", "import_static_set", "import_static_sets"]
