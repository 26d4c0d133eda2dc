"""The import_hate_data and fetch_datasets management commands (no network: downloads are faked)."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Example
from core import data_sources as sources
from dynabench.management.commands import fetch_datasets
from leaderboards.models import DatasetItem


def _call(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_import_hate_data_imports_everything_once(db, data_dir):
    first = _call("import_hate_data", "--data-dir", str(data_dir))
    second = _call("import_hate_data", "--data-dir", str(data_dir))

    assert "HatemojiBuild: read 5716, created 5716, already present 0, skipped 0" in first
    assert "HateCheck: read 3425, created 3425" in first
    assert "HatemojiCheck: read 3930, created 3930" in first
    assert "HatemojiBuild: read 5716, created 0, already present 5716" in second
    assert "0 new rows" in second
    assert Example.objects.count() == 5716
    assert DatasetItem.objects.count() == 3425 + 3930


def test_import_hate_data_names_a_missing_folder(db, tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(CommandError) as info:
        _call("import_hate_data", "--data-dir", str(missing))
    assert str(missing) in str(info.value)
    assert "fetch_datasets" in str(info.value)


def test_import_hate_data_names_a_missing_file(db, tmp_path):
    (tmp_path / "hatemoji_build").mkdir()
    with pytest.raises(CommandError) as info:
        _call("import_hate_data", "--data-dir", str(tmp_path))
    assert str(tmp_path / "hatemoji_build" / "train.csv") in str(info.value)
    assert str(tmp_path / "hatecheck" / "test_suite_cases.csv") in str(info.value)
    assert "fetch_datasets" in str(info.value)
    assert not Example.objects.exists()


def test_source_table_is_pinned_to_the_readme_commits():
    urls = {entry.dest: entry.url for entry in sources.FILES}
    assert urls["hatecheck/test_suite_cases.csv"] == (
        "https://raw.githubusercontent.com/paul-rottger/hatecheck-data/"
        "d84302298ceeb34f4b0dde2d8a1f4932c2caa612/test_suite_cases.csv"
    )
    assert urls["hatemoji_build/validation.csv"] == (
        "https://raw.githubusercontent.com/HannahKirk/Hatemoji/"
        "a626f63216158748d072e581efc00267031f4404/HatemojiBuild/validation.csv"
    )
    assert urls["hatemoji_check/test.csv"].endswith("/HatemojiCheck/test.csv")


@pytest.fixture
def fake_upstream(monkeypatch):
    """Two upstream files, one with a pinned hash and one not, served from memory."""
    body = {"known.csv": b"a,b\n1,2\n", "unknown.csv": b"c\n3\n"}
    upstream = sources.Upstream(repo="example/repo", commit="0" * 40, licence="CC BY 4.0", citation="")
    files = (
        sources.UpstreamFile(
            upstream, "known.csv", "x/known.csv", hashlib.sha256(body["known.csv"]).hexdigest()
        ),
        sources.UpstreamFile(upstream, "unknown.csv", "x/unknown.csv", None),
    )
    monkeypatch.setattr(fetch_datasets, "FILES", files)
    monkeypatch.setattr(fetch_datasets, "download", lambda url: body[url.rsplit("/", 1)[1]])
    return body


def test_fetch_refuses_an_unpinned_hash_without_trust(fake_upstream, tmp_path):
    with pytest.raises(CommandError) as info:
        _call("fetch_datasets", "--dest", str(tmp_path))
    digest = hashlib.sha256(fake_upstream["unknown.csv"]).hexdigest()
    assert digest in str(info.value)
    assert (tmp_path / "x" / "known.csv").read_bytes() == fake_upstream["known.csv"]
    assert not (tmp_path / "x" / "unknown.csv").exists()


def test_fetch_trusts_first_fetch_when_asked_and_prints_the_hash(fake_upstream, tmp_path):
    out = _call("fetch_datasets", "--dest", str(tmp_path), "--trust-first-fetch")
    assert hashlib.sha256(fake_upstream["unknown.csv"]).hexdigest() in out
    assert (tmp_path / "x" / "unknown.csv").read_bytes() == fake_upstream["unknown.csv"]


def test_fetch_rejects_a_hash_mismatch(fake_upstream, monkeypatch, tmp_path):
    fake_upstream["known.csv"] = b"tampered\n"
    with pytest.raises(CommandError, match="sha256 mismatch"):
        _call("fetch_datasets", "--dest", str(tmp_path), "--trust-first-fetch")
    assert not (tmp_path / "x" / "known.csv").exists()
