"""Zips in memory, and the files under a folder, for the model upload tests."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def zip_bytes(entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> io.BytesIO:
    """A zip in memory from (name or ZipInfo, content) pairs, names written exactly as given."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries:
            archive.writestr(name, content)
    buffer.seek(0)
    return buffer


def zip_dir(directory: Path, *, prefix: str = "", skip: tuple[str, ...] = ()) -> io.BytesIO:
    """Zip the files of ``directory`` (flat), under ``prefix`` ("" or "folder/"), minus ``skip``."""
    entries = [
        (f"{prefix}{p.name}", p.read_bytes())
        for p in sorted(Path(directory).iterdir())
        if p.is_file() and p.name not in skip
    ]
    return zip_bytes(entries)


def files_under(root: Path) -> set[str]:
    """Every file path under ``root``, relative, as POSIX strings."""
    return (
        {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} if root.exists() else set()
    )
