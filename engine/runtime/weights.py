"""Reading facts from saved weights without torch: the parameter count from safetensors headers."""

from __future__ import annotations

import json
import struct
from pathlib import Path

MAX_HEADER_BYTES = 100_000_000


def safetensors_numel(file: str | Path) -> int:
    """Scalars stored in one safetensors file, read from its JSON header (no tensor is loaded).

    Raises:
        OSError: the file cannot be read.
        ValueError: the header is truncated, implausibly large or not valid JSON.
    """
    file = Path(file)
    with file.open("rb") as fh:
        prefix = fh.read(8)
        if len(prefix) != 8:
            raise ValueError(f"{file.name} is too short to be a safetensors file")
        (header_len,) = struct.unpack("<Q", prefix)
        if header_len > MAX_HEADER_BYTES:
            raise ValueError(f"{file.name} has an implausible header ({header_len} bytes)")
        raw = fh.read(header_len)
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{file.name} has an unreadable header: {exc}") from exc
    total = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for dim in entry["shape"]:
            count *= int(dim)
        total += count
    return total


def count_parameters(path: str | Path) -> int:
    """Number of scalars in the safetensors weights of a ``save_pretrained`` directory (sharded too).

    Raises:
        FileNotFoundError: no ``model.safetensors`` (nor its index) in the directory.
        ValueError: a weights file whose header cannot be read.
    """
    directory = Path(path)
    single = directory / "model.safetensors"
    if single.is_file():
        return safetensors_numel(single)
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return sum(safetensors_numel(directory / shard) for shard in shards)
    raise FileNotFoundError(f"no model.safetensors in {directory}")
