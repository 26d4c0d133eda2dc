"""Reading context files (JSONL and CSV) into raw records with their line numbers.

Both readers accept a binary or text file object, strip a UTF-8 byte-order mark, accept LF and CRLF line
ends, skip empty lines, and keep every other character as it is (emoji, combining marks, right-to-left
text, U+2028 inside a value). They yield ``(line_number, record_or_error)``: a dict per record, or a
message when a line cannot be read; ``load_contexts`` (tasks.services) decides what a valid record is.

CSV: the first row is the header; a ``metadata`` cell holds a JSON object. A record spanning several
lines (a quoted value with line breaks) is numbered by its first line.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import IO

FORMATS = ("jsonl", "csv")
# csv's default field limit is 131,072 characters; a context may be as long as the config allows.
_CSV_FIELD_LIMIT = 1_000_000


class ContextFileError(Exception):
    """The file as a whole cannot be read (not UTF-8, no CSV header, unknown format)."""


def format_from_name(name: str) -> str:
    """``"jsonl"`` or ``"csv"`` from a file name's extension (.jsonl, .ndjson, .json / .csv).

    Raises:
        ContextFileError: for any other extension.
    """
    lower = name.lower()
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if lower.endswith(".csv"):
        return "csv"
    raise ContextFileError(f"{name}: use a .jsonl or .csv file.")


def _text(fileobj: IO) -> str:
    """The whole file as text: UTF-8 with or without a BOM."""
    data = fileobj.read()
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ContextFileError(f"The file is not UTF-8 text (line {line}, byte {exc.start}).") from None


def read_jsonl(fileobj: IO) -> Iterator[tuple[int, dict | str]]:
    """Records of a JSON Lines file: one JSON object per line."""
    text = _text(fileobj)
    # Split on LF only: str.splitlines would also break at U+2028 and friends, which JSON allows in strings.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, f"not valid JSON ({exc.msg} at column {exc.colno})"
            continue
        if not isinstance(record, dict):
            yield number, "not a JSON object"
            continue
        yield number, record


def read_csv(fileobj: IO) -> Iterator[tuple[int, dict | str]]:
    """Records of a CSV file with a header row; empty lines are skipped.

    Raises:
        ContextFileError: when the file has no header row or repeats a column name.
    """
    text = _text(fileobj)
    previous_limit = csv.field_size_limit(_CSV_FIELD_LIMIT)
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        try:
            header = next(reader)
        except StopIteration:
            raise ContextFileError("The CSV file is empty: it needs a header row.") from None
        except csv.Error as exc:
            raise ContextFileError(f"line 1: the CSV header cannot be read ({exc}).") from None
        header = [name.strip() for name in header]
        if len(set(header)) != len(header):
            raise ContextFileError("line 1: the CSV header repeats a column name.")
        line = reader.line_num + 1
        while True:
            start = line
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                yield start, f"the CSV row cannot be read ({exc})"
                break  # the reader cannot resynchronise after a broken quote
            line = reader.line_num + 1
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                yield start, f"{len(row)} columns where the header has {len(header)}"
                continue
            record: dict = dict(zip(header, row, strict=True))
            meta = record.get("metadata")
            if isinstance(meta, str):
                if not meta.strip():
                    record["metadata"] = {}
                else:
                    try:
                        record["metadata"] = json.loads(meta)
                    except json.JSONDecodeError:
                        yield start, "the metadata column is not valid JSON"
                        continue
            yield start, record
    finally:
        csv.field_size_limit(previous_limit)


def read_records(fileobj: IO, fmt: str) -> Iterator[tuple[int, dict | str]]:
    """Records of a ``fmt`` (``"jsonl"`` or ``"csv"``) file; see ``read_jsonl`` and ``read_csv``.

    Raises:
        ContextFileError: unknown format, or a file that cannot be read as a whole.
    """
    if fmt == "jsonl":
        return read_jsonl(fileobj)
    if fmt == "csv":
        return read_csv(fileobj)
    raise ContextFileError(f"Unknown context file format {fmt!r}; use one of {', '.join(FORMATS)}.")
