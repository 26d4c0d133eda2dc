"""``manage.py fetch_datasets --dest DIR``: download the pinned upstream hate-speech files.

Needs internet; never run by the tests or the demo. Each file's sha256 is checked against
``core.data_sources.FILES``. A file whose expected hash is not known yet is refused
unless ``--trust-first-fetch`` is given; its computed hash is printed either way so it can be pinned.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.data_sources import FILES, UpstreamFile

TIMEOUT_SECONDS = 60


def download(url: str) -> bytes:
    """Return the body of ``url`` (HTTPS GET). Raises ``OSError`` (``URLError``) on failure."""
    if not url.startswith("https://"):
        raise ValueError(f"Refusing a non-HTTPS URL: {url}")
    with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 - https only
        return response.read()


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class Command(BaseCommand):
    help = (
        "Download the pinned upstream HateCheck, HatemojiBuild and HatemojiCheck files into DEST and "
        "check their sha256. Needs internet."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dest", type=Path, required=True, help="Folder to write the files into.")
        parser.add_argument(
            "--trust-first-fetch",
            action="store_true",
            help="Keep files whose expected sha256 is not pinned yet (print the hash to pin it).",
        )

    def handle(self, *args, dest: Path, trust_first_fetch: bool, **options):
        problems: list[str] = []
        for entry in FILES:
            problem = self._fetch(entry, dest, trust_first_fetch)
            if problem:
                problems.append(problem)
        if problems:
            raise CommandError("Some files were not saved:\n  " + "\n  ".join(problems))
        self.stdout.write(self.style.SUCCESS(f"All {len(FILES)} files are in {dest}."))

    def _fetch(self, entry: UpstreamFile, dest: Path, trust_first_fetch: bool) -> str:
        target = dest / entry.dest
        if entry.sha256 and target.is_file() and sha256_of(target.read_bytes()) == entry.sha256:
            self.stdout.write(f"{entry.dest}: already present, sha256 matches")
            return ""
        try:
            data = download(entry.url)
        except (OSError, ValueError) as error:
            return f"{entry.dest}: download of {entry.url} failed: {error}"
        digest = sha256_of(data)
        if entry.sha256 is None:
            if not trust_first_fetch:
                return (
                    f"{entry.dest}: no sha256 pinned; computed {digest}. Check the file, then pin the hash "
                    "in core/data_sources.py or re-run with --trust-first-fetch."
                )
            self.stdout.write(f"{entry.dest}: sha256 {digest} (not pinned; trusted on first fetch)")
        elif digest != entry.sha256:
            return f"{entry.dest}: sha256 mismatch for {entry.url}: expected {entry.sha256}, got {digest}"
        else:
            self.stdout.write(f"{entry.dest}: sha256 {digest} OK")
        _write_atomically(target, data)
        return ""
