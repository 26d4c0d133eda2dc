"""Importers that turn public datasets into rounds and examples (docs/datasets.md, "The source files")."""

from .common import HATEFUL, NOT_HATEFUL, ImportReport, normalise_hate_label, read_csv_rows
from .hatemoji_build import import_hatemoji_build

__all__ = [
    "HATEFUL",
    "NOT_HATEFUL",
    "ImportReport",
    "import_hatemoji_build",
    "normalise_hate_label",
    "read_csv_rows",
]
