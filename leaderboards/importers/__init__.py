"""Importers for datasets models are scored on (static test suites); where their files come from is
``core.data_sources``."""

from .static_sets import STATIC_SETS, StaticSet, import_static_set, import_static_sets

__all__ = ["STATIC_SETS", "StaticSet", "import_static_set", "import_static_sets"]
