"""Safe extraction of an uploaded model zip (a ``save_pretrained`` directory) into one folder.

Nothing in the archive is trusted: every entry is checked before a single byte is written, and files
are written by this module (never ``ZipFile.extract``) to names it has checked, so nothing lands
outside the target folder. Refused: absolute paths and drive letters, ``..`` components, symbolic
links and other special files (read from the zip's Unix mode bits), encrypted entries, duplicate
names, more than ``MAX_FILES`` entries, a total uncompressed size over the limit (zip bombs; counted
again while writing, whatever the headers claim), and folders nested beneath one wrapping folder.
Pickle checkpoints are skipped unless allowed, and an archive whose only weights are pickles is refused.
"""

from __future__ import annotations

import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

MAX_FILES = 1000
COPY_CHUNK = 1 << 20
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
SAFETENSORS_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
_DRIVE = re.compile(r"^[A-Za-z]:")


class ArchiveRefused(Exception):
    """The archive cannot be accepted; the message names the entry and the reason (shown to the owner)."""


@dataclass
class ExtractionReport:
    """What was written: file names (flat, in the target folder), bytes written, pickle files skipped."""

    files: list[str] = field(default_factory=list)
    total_bytes: int = 0
    skipped_pickles: list[str] = field(default_factory=list)


def _is_pickle(name: str) -> bool:
    return name.lower().endswith(PICKLE_SUFFIXES) or name.lower().endswith(".bin.index.json")


def _entry_parts(info: zipfile.ZipInfo) -> tuple[str, ...]:
    """The checked path components of one entry (``("folder", "file")``), or raise ArchiveRefused."""
    raw = info.filename
    if not raw or "\x00" in raw:
        raise ArchiveRefused("the archive has an entry with an empty or invalid name")
    name = raw.replace("\\", "/")
    if name.startswith("/") or _DRIVE.match(name):
        raise ArchiveRefused(f"entry {raw!r} has an absolute path; refused")
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if any(p == ".." for p in parts):
        raise ArchiveRefused(f"entry {raw!r} points outside the model folder ('..'); refused")
    if not parts:
        raise ArchiveRefused(f"entry {raw!r} has no file name")
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise ArchiveRefused(f"entry {raw!r} is a symbolic link; links are refused")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise ArchiveRefused(f"entry {raw!r} is a special file (mode {oct(mode)}); refused")
    if info.flag_bits & 0x1:
        raise ArchiveRefused(f"entry {raw!r} is encrypted; upload an unencrypted zip")
    return parts


def _plan(archive: zipfile.ZipFile, *, max_bytes: int, max_files: int) -> list[tuple[zipfile.ZipInfo, str]]:
    """Check every entry and return (entry, flat file name) pairs of the files to write."""
    infos = archive.infolist()
    if len(infos) > max_files:
        raise ArchiveRefused(f"the archive has {len(infos)} entries; at most {max_files} are accepted")
    entries = []
    declared = 0
    for info in infos:
        parts = _entry_parts(info)
        is_dir = info.is_dir() or stat.S_IFMT(info.external_attr >> 16) == stat.S_IFDIR
        entries.append((info, parts, is_dir))
        if not is_dir:
            declared += info.file_size
    if declared > max_bytes:
        raise ArchiveRefused(f"the archive unpacks to {declared:,} bytes; the limit is {max_bytes:,} bytes")
    files = [(info, parts) for info, parts, is_dir in entries if not is_dir]
    if not files:
        raise ArchiveRefused("the archive contains no files")
    # Accept files at the top, or all of them under one wrapping folder; nothing deeper.
    tops = {parts[0] for _, parts in files if len(parts) > 1}
    wrapper = None
    if tops:
        if len(tops) > 1 or any(len(parts) == 1 for _, parts in files):
            raise ArchiveRefused(
                "the archive mixes folders; put the save_pretrained files at the top of the zip "
                "or inside one folder"
            )
        wrapper = tops.pop()
    for info, parts, is_dir in entries:
        depth = len(parts) - (1 if wrapper is not None and parts[0] == wrapper else 0)
        if (is_dir and depth > 0) or (not is_dir and depth != 1) or (is_dir and parts[0] != wrapper):
            raise ArchiveRefused(
                f"entry {info.filename!r} is in a nested folder; a save_pretrained directory is flat"
            )
    plan = []
    seen: set[str] = set()
    for info, parts in files:
        name = parts[-1]
        if name.lower() in seen:
            raise ArchiveRefused(f"the archive holds {name!r} twice")
        seen.add(name.lower())
        plan.append((info, name))
    return plan


def extract_model_zip(
    fileobj: BinaryIO,
    target: str | Path,
    *,
    max_bytes: int,
    max_files: int = MAX_FILES,
    allow_pickle: bool = False,
) -> ExtractionReport:
    """Check and extract a zipped ``save_pretrained`` directory into ``target`` (created, must be new).

    Args:
        fileobj: a seekable binary file holding the zip (e.g. a Django ``UploadedFile``).
        target: the folder to create; the files are written flat into it.
        max_bytes: limit on the total uncompressed size, in bytes.
        max_files: limit on the number of entries.
        allow_pickle: write pickle checkpoints (``*.bin``, ``*.pt``...) too; otherwise they are skipped,
            and an archive with pickle weights but no safetensors weights is refused.

    Returns:
        An ``ExtractionReport``.

    Raises:
        ArchiveRefused: not a zip, or any rule in the module docstring broken. Whatever was written
            before the refusal is removed (``target`` included).
    """
    target = Path(target)
    try:
        archive = zipfile.ZipFile(fileobj)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ArchiveRefused(f"the upload is not a readable zip file: {exc}") from exc
    with archive:
        plan = _plan(archive, max_bytes=max_bytes, max_files=max_files)
        names = {name for _, name in plan}
        pickles = sorted(n for n in names if _is_pickle(n))
        if pickles and not allow_pickle:
            if not names.intersection(SAFETENSORS_WEIGHTS):
                raise ArchiveRefused(
                    f"the archive has only pickle weights ({', '.join(pickles)}); save the model with "
                    "safetensors (save_pretrained(..., safe_serialization=True)), or ask a task owner "
                    "to allow pickle checkpoints for it"
                )
            plan = [(info, name) for info, name in plan if not _is_pickle(name)]
        target.mkdir(parents=True, exist_ok=False)
        root = target.resolve()
        report = ExtractionReport(skipped_pickles=pickles if not allow_pickle else [])
        try:
            for info, name in plan:
                destination = (root / name).resolve()
                if destination.parent != root:  # belt and braces: the name is a plain file name
                    raise ArchiveRefused(f"entry {info.filename!r} would be written outside the model folder")
                report.total_bytes += _copy(archive, info, destination, max_bytes - report.total_bytes)
                report.files.append(name)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
    return report


def _copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, destination: Path, budget: int) -> int:
    """Write one entry, counting real bytes against ``budget``; return the bytes written."""
    written = 0
    try:
        with archive.open(info) as src, destination.open("xb") as out:
            while chunk := src.read(COPY_CHUNK):
                written += len(chunk)
                if written > budget:
                    raise ArchiveRefused(
                        f"entry {info.filename!r} unpacks beyond the size limit; refused (zip bomb?)"
                    )
                out.write(chunk)
    except ArchiveRefused:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
        raise ArchiveRefused(f"entry {info.filename!r} cannot be read: {exc}") from exc
    return written
