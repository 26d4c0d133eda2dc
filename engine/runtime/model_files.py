"""A model folder on disk: the checks before and after loading it, what identifies its files, and the
error every loader raises (``InferenceError``), with server paths taken out of user-facing messages.

Shared by the classifier (``inference``), the span predictor (``qa_inference``) and endpoint calls
(``endpoints``), so none of them imports another for these. Imports no ML runtime.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import uuid
from pathlib import Path

logger = logging.getLogger(__name__)

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
PICKLE_WEIGHT_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json")


class InferenceError(Exception):
    """A model could not produce an output; the message says why (shown to owners, stored on predictions).

    Messages never name a server path or the model's folder (a uuid): they are shown on model pages,
    in the API and on stored predictions. The full detail goes to the server log.
    """


# An absolute POSIX path of at least two components ("/tmp/x/model.safetensors"); not the "//" of a URL.
_ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s/'\"`]+/)+([^\s/'\"`]*)")
#: Unused checkpoint tensors that do not change a model's outputs: a BERT pooler the head does not read.
HARMLESS_UNEXPECTED = re.compile(r"(^|\.)pooler\.")
MAX_KEYS_NAMED = 5


def without_server_paths(text: str, directory: str | Path | None = None) -> str:
    """``text`` with server paths taken out, for messages shown to users.

    The model folder ``directory`` (as given and resolved) becomes "the model folder" and a file in it
    keeps only its name; any other absolute path keeps only its last component.
    E.g. ``"no file /srv/models/hate/3cca.../model.safetensors"`` -> ``"no file model.safetensors"``.
    """
    if directory is not None and str(directory):
        forms = {str(directory), str(Path(directory).expanduser().resolve())}
        for form in sorted(forms, key=len, reverse=True):
            text = re.sub(re.escape(form) + r"/(?=[\w.-])", "", text)  # a file in it: its name
            text = re.sub(re.escape(form) + r"/?", "the model folder", text)
    return _ABSOLUTE_PATH.sub(lambda m: m.group(1) or "a server folder", text)


def _names(keys, limit: int = MAX_KEYS_NAMED) -> str:
    keys = sorted(keys)
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def check_loading_info(info: dict, architecture: str) -> None:
    """Refuse weights that do not fill the architecture ``config.json`` names.

    ``info`` is the dict ``from_pretrained(..., output_loading_info=True)`` returns (transformers 5:
    ``missing_keys``, ``unexpected_keys``, ``mismatched_keys``, ``error_msgs``). transformers fills a
    missing weight with random numbers and only prints a report, so a checkpoint without its head (or
    with no real tensor at all) would otherwise serve random predictions.

    Raises:
        InferenceError: naming the missing (random) weights, the unexpected ones (tensors the
            architecture does not use: the checkpoint was saved from another architecture), weights of
            the wrong shape, and loader errors. An unused pooler (``HARMLESS_UNEXPECTED``) is allowed.
    """
    missing = set(info.get("missing_keys") or ())
    unexpected = {k for k in info.get("unexpected_keys") or () if not HARMLESS_UNEXPECTED.search(k)}
    mismatched = {
        str(k[0]) if isinstance(k, tuple | list) else str(k) for k in info.get("mismatched_keys") or ()
    }
    errors = [str(e) for e in info.get("error_msgs") or ()]
    if not (missing or unexpected or mismatched or errors):
        return
    problems = []
    if missing:
        problems.append(f"missing {len(missing)} weight(s) (they would be random): {_names(missing)}")
    if unexpected:
        problems.append(f"unexpected weight(s) the architecture does not use: {_names(unexpected)}")
    if mismatched:
        problems.append(f"weight(s) of the wrong shape: {_names(mismatched)}")
    if errors:
        problems.append(f"loader errors: {'; '.join(errors[:2])}")
    raise InferenceError(
        f"model.safetensors does not match the architecture in config.json ({architecture}): "
        + "; ".join(problems)
    )


def labels_from_id2label(id2label: dict) -> list[str]:
    """The label strings in output-index order from a config's ``id2label``.

    Raises:
        InferenceError: the ids are not exactly 0..n-1 (e.g. ``{"0": "hateful", "5": "not-hateful"}``).
    """
    try:
        ids = sorted(int(k) for k in id2label)
    except (TypeError, ValueError):
        ids = None
    if ids is None or ids != list(range(len(ids))):
        got = ", ".join(str(k) for k in (ids if ids is not None else id2label))
        raise InferenceError(f"id2label must map 0..n-1 to the task's labels; got ids {got}")
    by_id = {int(k): v for k, v in id2label.items()}
    return [str(by_id[i]) for i in ids]


#: Files whose change means "load again": config (labels, preprocessing), weights, tokenizer.
IDENTITY_FILES = (
    "config.json",
    *WEIGHT_FILES,
    *PICKLE_WEIGHT_FILES,
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
)

FileIdentity = tuple[tuple[str, int, int, int, int], ...]


def files_identity(path: str | Path) -> FileIdentity:
    """What identifies a model directory's current contents: for the directory itself and each of
    ``IDENTITY_FILES`` that exists, ``(name, st_dev, st_ino, st_size, st_mtime_ns)``.

    A rewritten file changes its size or ``mtime_ns``; a directory or file replaced by a rename
    changes its inode. An empty tuple when the directory does not exist.
    """
    directory = Path(path)
    identity = []
    for name, target in [(".", directory)] + [(n, directory / n) for n in IDENTITY_FILES]:
        try:
            st = target.stat()
        except OSError:
            if name == ".":
                return ()
            continue
        identity.append((name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(identity)


def weights_bytes(path: str | Path) -> int:
    """Bytes of a model directory's weight files (``*.safetensors``, ``*.bin``, shards included): what
    loading it costs in memory, near enough (float32 weights load at their file size). 0 when the
    directory is missing."""
    directory = Path(path)
    if not directory.is_dir():
        return 0
    return sum(
        f.stat().st_size for f in directory.iterdir() if f.suffix in (".safetensors", ".bin") and f.is_file()
    )


def check_model_dir(path: str | Path, *, allow_pickle: bool = False) -> Path:
    """Check that ``path`` looks like a ``save_pretrained`` classifier directory; return it as a Path.

    Raises:
        InferenceError: missing directory, no config.json, no (safetensors) weights, no tokenizer.
    """
    directory = Path(path)
    if not str(path):
        raise InferenceError("the model has no directory (path is empty)")
    if not directory.is_dir():
        logger.warning("model directory %s does not exist", directory)
        raise InferenceError("the model directory does not exist on the server (its files are gone)")
    present = {p.name for p in directory.iterdir()}
    if "config.json" not in present:
        raise InferenceError("the model directory has no config.json (not a save_pretrained directory)")
    allowed = WEIGHT_FILES + (PICKLE_WEIGHT_FILES if allow_pickle else ())
    if not present.intersection(allowed):
        if present.intersection(PICKLE_WEIGHT_FILES):
            raise InferenceError(
                "the model directory has only pickle weights (pytorch_model.bin); "
                "save it with safetensors (save_pretrained(..., safe_serialization=True))"
            )
        raise InferenceError("the model directory has no weights (expected model.safetensors)")
    if not present.intersection({"tokenizer.json", "vocab.txt", "tokenizer_config.json"}):
        raise InferenceError("the model directory has no tokenizer files (tokenizer.json or vocab.txt)")
    return directory


def swap_into_place(new_dir: Path, final_dir: Path) -> None:
    """Replace ``final_dir`` by ``new_dir`` with renames (same file system), so that a reader sees the
    old folder or the new one, never a half-written one. An old ``final_dir`` is renamed aside to
    ``.<name>.old-<8 hex>`` and removed afterwards.
    """
    if final_dir.exists():
        old = final_dir.with_name(f".{final_dir.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final_dir, old)
        os.replace(new_dir, final_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new_dir, final_dir)


def digest_problem(path: Path, size: int, sha256: str) -> str:
    """Why ``path`` is not the file pinned by ``size`` (bytes) and ``sha256`` (hex), or "" when it is.

    Reads the file once in 1 MiB blocks (about 1 s for 400 MB), only when the size matches. Messages
    name the file, never its folder: e.g. ``"model.safetensors is 5 bytes, not the expected 437,971,872"``
    or ``"model.safetensors does not have the expected sha256"``; ``"x is missing"`` for no file.
    """
    if not path.is_file():
        return f"{path.name} is missing"
    actual = path.stat().st_size
    if actual != size:
        return f"{path.name} is {actual:,} bytes, not the expected {size:,}"
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != sha256:
        return f"{path.name} does not have the expected sha256"
    return ""
