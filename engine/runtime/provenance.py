"""What produced a generated answer, precisely enough to produce it again: the sha256 of the weights
files, of the tokenizer and of the chat template, and the versions of the libraries that ran them
(docs/generative.md, "Provenance").

A generation record (``generative.Generation.provenance``) keeps this beside its decoding settings and
seed. Two answers with the same provenance, prompt and greedy decoding on the same machine are the same
bytes; a replay flags one that is not (``generative_bench.replay``).

The weights' digests are computed once per file and process, keyed by the file's path, size and
modification time (hashing SmolLM2's 270 MB takes about half a second).
"""

from __future__ import annotations

import functools
import hashlib
import platform
import threading
from importlib import metadata
from pathlib import Path

#: Weight files, as ``from_pretrained`` reads them.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".onnx")
#: Tokenizer files, hashed together in this order (those present).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "merges.txt",
    "special_tokens_map.json",
)

_digests: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def file_sha256(path: Path) -> str:
    """The hex sha256 of ``path``'s bytes, cached per (path, size, modification time) in this process.

    Raises:
        OSError: the file cannot be read.
    """
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _lock:
        known = _digests.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    with _lock:
        _digests[key] = value
    return value


def library_versions(*names: str) -> dict[str, str]:
    """``{name: version}`` of the installed distributions named (those installed), and ``python``."""
    versions = {"python": platform.python_version()}
    for name in names:
        version = _installed_version(name)
        if version is not None:
            versions[name] = version
    return versions


@functools.cache
def _installed_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None when not installed), read once a process:
    ``importlib.metadata`` searches the folders of ``sys.path`` on disk at each call: 1.1 ms of CPU for
    the client's two names, which every remote answer records (docs/serving.md, "Many streams per
    worker"). A process keeps the code it imported, so an upgrade on disk is not what it runs anyway."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def local_provenance(folder: Path, chat_template: str | None) -> dict:
    """The provenance of a model loaded from ``folder``:

    ``{"weights": {file name: sha256}, "tokenizer": sha256 of the tokenizer files concatenated (each
    name, then its bytes, in ``TOKENIZER_FILES`` order), "chat_template": sha256 of the template's UTF-8
    text (None without one), "libraries": {python, torch, transformers, tokenizers, ...}}``.

    Raises:
        OSError: a file cannot be read.
    """
    folder = Path(folder)
    weights = {
        p.name: file_sha256(p)
        for p in sorted(folder.iterdir())
        if p.is_file() and p.suffix in WEIGHT_SUFFIXES
    }
    tokenizer = hashlib.sha256()
    for name in TOKENIZER_FILES:
        path = folder / name
        if path.is_file():
            tokenizer.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return {
        "weights": weights,
        "tokenizer": tokenizer.hexdigest(),
        "chat_template": hashlib.sha256(chat_template.encode("utf-8")).hexdigest() if chat_template else None,
        "libraries": library_versions("torch", "transformers", "tokenizers", "accelerate", "gguf"),
    }


def remote_provenance(model: str, system_fingerprint: str | None = None) -> dict:
    """The provenance of a remote answer: the server's model name and its ``system_fingerprint`` (the
    OpenAI protocol's id of the serving configuration; None when the server sends none), and the client's
    library versions. The weights are the server's, not known here."""
    return {
        "server_model": model,
        "system_fingerprint": system_fingerprint,
        # openai 3 reads and writes HTTP with httpx2, earlier releases with httpx: whichever is installed.
        "libraries": library_versions("openai", "httpx", "httpx2"),
    }
