"""Where the hate-speech data comes from: upstream repositories pinned to a commit, and their files.

The one table of download URLs (used by ``manage.py fetch_datasets``) and of licence and source
strings (stored on the datasets). Commits and licences are those the data folder's README names
(docs/datasets.md, "The source files").

``sha256`` is the hash of the *upstream* file. The copies in the data folder (``DYNABENCH_DATA_DIR``)
had rows held back, so their hashes differ and cannot stand in; the upstream hashes could not be
computed offline. They are ``None`` until someone fetches with ``--trust-first-fetch`` on a machine
with internet, checks the files, and pastes the printed hashes here ("fill on first verified fetch").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Upstream:
    """A public GitHub repository at a pinned commit."""

    repo: str
    commit: str
    licence: str
    citation: str

    @property
    def source(self) -> str:
        """``github.com/<repo>@<commit>``, the form stored in ``Dataset.source``."""
        return f"github.com/{self.repo}@{self.commit}"


@dataclass(frozen=True)
class UpstreamFile:
    """One file to fetch: ``path`` in the repository, ``dest`` relative to the data folder."""

    upstream: Upstream
    path: str
    dest: str
    sha256: str | None

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.upstream.repo}/{self.upstream.commit}/{self.path}"


HATECHECK = Upstream(
    repo="paul-rottger/hatecheck-data",
    commit="d84302298ceeb34f4b0dde2d8a1f4932c2caa612",
    licence="CC BY 4.0",
    citation=(
        "Röttger, Vidgen, Nguyen, Waseem, Margetts, Pierrehumbert. 2021. HateCheck: Functional Tests "
        "for Hate Speech Detection Models. ACL 2021."
    ),
)
HATEMOJI = Upstream(
    repo="HannahKirk/Hatemoji",
    commit="a626f63216158748d072e581efc00267031f4404",
    licence="CC BY 4.0",
    citation=(
        "Kirk, Vidgen, Röttger, Thrush, Hale. 2022. Hatemoji: A Test Suite and Adversarially-Generated "
        "Dataset for Benchmarking and Detecting Emoji-based Hate. NAACL 2022."
    ),
)

# sha256=None: fill on first verified fetch (see the module docstring).
FILES: tuple[UpstreamFile, ...] = (
    UpstreamFile(HATECHECK, "test_suite_cases.csv", "hatecheck/test_suite_cases.csv", None),
    UpstreamFile(HATECHECK, "LICENSE", "hatecheck/LICENSE", None),
    UpstreamFile(HATEMOJI, "HatemojiBuild/train.csv", "hatemoji_build/train.csv", None),
    UpstreamFile(HATEMOJI, "HatemojiBuild/validation.csv", "hatemoji_build/validation.csv", None),
    UpstreamFile(HATEMOJI, "HatemojiBuild/test.csv", "hatemoji_build/test.csv", None),
    UpstreamFile(HATEMOJI, "LICENSE", "hatemoji_build/LICENSE", None),
    UpstreamFile(HATEMOJI, "HatemojiCheck/test.csv", "hatemoji_check/test.csv", None),
    UpstreamFile(HATEMOJI, "LICENSE", "hatemoji_check/LICENSE", None),
)
