"""Round releases: a round's validated examples frozen into versioned, read-only files.

``create_release(round_=..., user=...)`` writes ``<DYNABENCH_RELEASES_DIR>/<task>/round-<n>/v<version>/``:

* ``train.jsonl``, ``dev.jsonl``, ``test.jsonl``: one row per example (``release_row``: the export
  record of ``annotation.exports``, docs/export-format.md, pseudonymised, with its predictions and
  validations), in the split the training loop gives it (``leaderboards.services.split_of``: its own
  split, else the hash of its id, 80/10/10; the row's ``split`` says which). A split with no row has
  no file. Unlike the export, the JSON-valued keys (``predictions``, ``validations``, ``tags``,
  ``metadata``) are JSON values, not strings holding JSON, and each row says whether its model input
  is exactly the same as another released row's (``is_duplicate``, ``duplicate_of``; ``duplicates``).
* ``release.json``: the format version, task, round, version, licence, counts (rows and labels per
  split, duplicates), lineage, the files with their SHA-256 and size, and ``sha256``.
* ``README.md``: a dataset card whose YAML header the Hugging Face hub reads (``license``,
  ``pretty_name``, ``task_categories``, ``size_categories``, ``configs`` with one data file per split).
  A red-teaming task's card starts with its content warning and gives the goal, the rubric, the kinds
  of failure and each target model with its decoding settings (``generative_targets``). Every card
  has a section "Artefact probes": the round's probes as stored when the version was made
  (``cycle.probes``; not applicable to a red-teaming task).

What goes in: the round's examples written on the platform (``source`` created) and settled
``validated_correct``, as Dynabench's own releases did. Out: pending, ``validated_incorrect`` and
``flagged`` examples (the validators said the label is wrong or the example unusable), retracted ones
(their authors withdrew them) and imported or replayed ones (they are another dataset's rows, released
by that dataset).

Versions: the content hash ``sha256`` (``content_sha256``: the SHA-256 of the ``sha256sum`` manifest of
the split files, in the order train, dev, test) decides. The same content as the latest release returns
that release; any change (a new validated example, an overturned verdict, a re-scored prediction) makes
version n+1 beside it, and a published version is never touched: files are written into a temporary
folder, renamed into place, then made read-only, and the ``Release`` row refuses changes. The round's
row is locked for the whole call, so two owners releasing at once get one version.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.template.loader import render_to_string

from annotation.exports import FORMAT_VERSION as EXPORT_FORMAT_VERSION
from annotation.exports import iter_records
from annotation.models import Example
from cycle.kinds import rules_for
from leaderboards.services import SPLITS, split_of
from models_registry.models import RegisteredModel
from tasks.models import Round
from tasks.red_team_stats import red_team_stats

from ..models import Release, TrainingJob
from ..probes.selectors import release_card_probes

#: The layout of ``release.json`` and of the rows (a new key bumps the minor number; a removed, renamed
#: or retyped one the major). 2.0: rows in the trainer's split, JSON-valued keys as JSON values,
#: ``is_duplicate`` and ``duplicate_of``, ``counts.duplicates``.
RELEASE_FORMAT_VERSION = "2.0"
SPLIT_FILES = {split: f"{split}.jsonl" for split in SPLITS}
#: Export keys whose value is JSON text (docs/export-format.md); a release row holds the decoded value.
JSON_TEXT_KEYS = ("predictions", "validations", "tags", "metadata")
RELEASED_STATUS = "validated_correct"
RELEASED_SOURCE = "created"


class ReleaseError(Exception):
    """A release that cannot be made (nothing to release); says why."""


# --- what is released -----------------------------------------------------------------------------


def trainer_split(record: dict[str, Any]) -> str:
    """The split the training loop and the round datasets give the record's example
    (``leaderboards.services.split_of``: its own ``split`` when it has one, else
    ``hash_split(example_id)``: 0-7 train, 8 dev, 9 test), so a release never puts an example the next
    target trained on in ``test``, nor one it is scored on in ``train``."""
    return split_of(Example(pk=record["example_id"], split=record["split"]))


def release_row(record: dict[str, Any], split: str) -> dict[str, Any]:
    """An export ``record`` as a release row: ``split`` set to the released split, and each of
    ``JSON_TEXT_KEYS`` decoded from its JSON text to the list or object it holds (the export wrote it
    with ``json.dumps``, so nothing is lost). ``inputs`` and ``context`` are objects of texts already;
    a text that looks like JSON stays text. The duplicate keys are added by ``mark_duplicates``."""
    row = {**record, "split": split}
    for key in JSON_TEXT_KEYS:
        row[key] = json.loads(record[key])
    return row


def model_text(row: dict[str, Any], fields: list[str]) -> tuple[str, ...]:
    """What the target models read of a row: the values of the task's ``model_input_fields`` (e.g.
    ``("statement",)``, or ``("premise", "hypothesis")`` for NLI), from its context and inputs (an input
    wins a name clash, as ``Example.model_input_from``), as they are stored: no case folding, no
    whitespace trimming. A red-teaming row's is its mode, messages, question and options."""
    if row.get("mode"):  # a red-teaming row: the conversation, or the item, is what was written
        return (row["mode"], json.dumps(row["messages"]), row["question"], json.dumps(row["options"]))
    values = {**(row["context"] or {}), **row["inputs"]}
    return tuple(values.get(field, "") for field in fields)


def mark_duplicates(by_split: dict[str, list[dict[str, Any]]], fields: list[str]) -> dict[str, int]:
    """Flag rows whose model text (``model_text``) is exactly another released row's, across every split:
    ``is_duplicate`` (bool, true for every row of such a group) and ``duplicate_of`` (the example id of
    the group's first row, lowest id, for the others; ``0`` for the first and for unique rows, so
    keeping ``duplicate_of == 0`` keeps one row per text). Sets both keys on every row, in place.

    Returns:
        ``{"groups": texts written more than once, "rows": rows with a ``duplicate_of``,
        "across_splits": groups whose rows are in more than one split}``; e.g. one text in three rows,
        two in train and one in test: ``{"groups": 1, "rows": 2, "across_splits": 1}``.
    """
    groups: dict[tuple[str, ...], list[tuple[int, str]]] = {}
    for split, rows in by_split.items():
        for row in rows:
            groups.setdefault(model_text(row, fields), []).append((row["example_id"], split))
    first_of = {text: min(pk for pk, _ in members) for text, members in groups.items() if len(members) > 1}
    for rows in by_split.values():
        for row in rows:
            first = first_of.get(model_text(row, fields))
            row["is_duplicate"] = first is not None
            row["duplicate_of"] = first if first is not None and first != row["example_id"] else 0
    shared = [groups[text] for text in first_of]
    return {
        "groups": len(shared),
        "rows": sum(len(members) - 1 for members in shared),
        "across_splits": sum(1 for members in shared if len({split for _, split in members}) > 1),
    }


def released_records(round_: Round) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int]]:
    """The round's release rows by split (``SPLITS``; ``release_row``, in example id order, duplicates
    marked) and the duplicate counts (``mark_duplicates``)."""
    by_split: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    for record in iter_records(round_.task, [round_]):
        if (
            record["status"] != RELEASED_STATUS
            or record["is_retracted"]
            or record["source"] != RELEASED_SOURCE
        ):
            continue
        split = trainer_split(record)
        by_split[split].append(release_row(record, split))
    duplicates = mark_duplicates(by_split, round_.task.cfg.model_input_fields)
    return by_split, duplicates


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    # As the export writes it: keys in the documented order, real characters, one line per example.
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode()


def content_sha256(files: dict[str, bytes]) -> str:
    """SHA-256 of the ``sha256sum`` manifest (``<hex>  <name>\\n`` per file) of the split files, in the
    order train, dev, test; ``files`` maps file names to their bytes (absent splits left out). Hashing
    the manifest instead of the concatenation keeps ``a`` in train and ``b`` in dev apart from ``ab`` in train."""
    manifest = "".join(
        f"{hashlib.sha256(files[name]).hexdigest()}  {name}\n"
        for name in SPLIT_FILES.values()
        if name in files
    )
    return hashlib.sha256(manifest.encode()).hexdigest()


def _counts(by_split: dict[str, list[dict[str, Any]]], duplicates: dict[str, int]) -> dict[str, Any]:
    splits = {}
    for split, records in by_split.items():
        if records:
            labels = Counter(r["target"] for r in records if isinstance(r["target"], str))
            splits[split] = {"rows": len(records), "labels": dict(sorted(labels.items()))}
    return {"total": sum(s["rows"] for s in splits.values()), "splits": splits, "duplicates": duplicates}


def lineage(round_: Round) -> dict[str, Any]:
    """The round's target models and the rounds whose data trained each: from the training job that made
    the model (``TrainingJob.rounds``), else its card (``training.rounds``, written by the loop), else
    unknown (``null``: an uploaded or hub model)."""
    targets = []
    for target in round_.targets.select_related("model").order_by("position", "pk"):
        model = target.model
        job = TrainingJob.objects.filter(model=model, status=TrainingJob.Status.DONE).order_by("-pk").first()
        card_rounds = ((model.card or {}).get("training") or {}).get("rounds")
        if job is not None:
            rounds, source = sorted(job.rounds), "training_job"
        elif isinstance(card_rounds, list):
            rounds, source = sorted(card_rounds), "model_card"
        else:
            rounds, source = None, "unknown"
        targets.append(
            {
                "model_id": model.pk,
                "name": model.name,
                "round_target_id": target.pk,
                "position": target.position,
                "trained_on_rounds": rounds,
                "trained_on_source": source,
            }
        )
    return {"round": round_.number, "targets": targets}


# --- the dataset card -----------------------------------------------------------------------------

_CC = re.compile(r"\bCC[ -]?(BY(?:-(?:NC|SA|ND))*)[ -]?(\d\.\d)\b", re.IGNORECASE)


def hub_licence_id(licence: str) -> str:
    """The Hugging Face hub's licence id for a task licence: ``CC BY-NC 4.0 (ANLI ...)`` → ``cc-by-nc-4.0``;
    ``other`` for anything else (the card's ``license_name`` then gives the text)."""
    match = _CC.search(licence or "")
    return f"cc-{match.group(1).lower()}-{match.group(2)}" if match else "other"


def size_category(n: int) -> str:
    """The hub's ``size_categories`` value for ``n`` rows (``n<1K``, ``1K<n<10K``, ...)."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
    return next((label for bound, label in bounds if n < bound), "n>1M")


#: A generative target's settings a red-teaming card gives, in this order (docs/generative.md,
#: "Registering a generative model"); decoding first, then what else shaped its answers.
CARD_DECODING_KEYS = ("temperature", "top_p", "max_new_tokens", "stop", "seed")


def generative_targets(release_info: dict[str, Any]) -> list[dict[str, Any]]:
    """The red-teaming card's target models, in the lineage's order: ``[{"name", "model_id", "served",
    "decoding", "system_prompt"}]`` (the prompt as a JSON string, ``""`` for none), where ``served`` is ``"on the platform's server"`` or ``"by an
    OpenAI-compatible chat server, as model <chat model name>"`` and ``decoding`` is ``[(setting,
    text)]`` for ``CARD_DECODING_KEYS`` (the stored value, e.g. ``("temperature", "0.7")``,
    ``("stop", "none")`` for no stop string, ``("seed", "none")``), from ``RegisteredModel.generation``.
    Nothing secret is read: no key, no name of the variable or file holding one, no endpoint URL (it
    may carry credentials)."""
    ids = [t["model_id"] for t in release_info["lineage"]["targets"]]
    models = RegisteredModel.objects.in_bulk(ids)
    targets = []
    for model_id in ids:
        model = models.get(model_id)
        if model is None:
            continue
        stored = model.generation or {}
        remote = model.source == RegisteredModel.Source.CHAT_ENDPOINT
        decoding = []
        for key in CARD_DECODING_KEYS:
            value = stored.get(key)
            if key == "stop":
                text = ", ".join(json.dumps(v, ensure_ascii=False) for v in value or []) or "none"
            else:
                text = "none" if value is None else str(value)
            decoding.append((key, text))
        targets.append(
            {
                "name": model.name,
                "model_id": model.pk,
                "served": (
                    f"by an OpenAI-compatible chat server, as model `{model.chat_model_name}`"
                    if remote
                    else "on the platform's server"
                ),
                "decoding": decoding,
                "system_prompt": json.dumps(stored["system_prompt"], ensure_ascii=False)
                if stored.get("system_prompt")
                else "",
            }
        )
    return targets


def _red_team_figures(task, round_number: int):
    """The ``RedTeamStats`` of ``task``'s round ``round_number`` (None when the round is unknown)."""
    round_ = task.rounds.filter(number=round_number).first()
    return red_team_stats(task, [round_]).get(round_.pk) if round_ is not None else None


def dataset_card(release_info: dict[str, Any], task) -> str:
    """``README.md``: a YAML header (JSON-quoted strings, valid YAML) and a short description."""
    licence = release_info["licence"]
    kind = rules_for(task.cfg)
    header = {
        "license": hub_licence_id(licence),
        "pretty_name": f"{task.name}, round {release_info['round']} (release v{release_info['version']})",
        "task_categories": kind.hub_task_category,
        "size_categories": size_category(release_info["counts"]["total"]),
    }
    lines = ["---"] + [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in header.items()]
    if header["license"] == "other":
        lines.append(f"license_name: {json.dumps(licence or 'unspecified', ensure_ascii=False)}")
    lines += ["configs:", "- config_name: default", "  data_files:"]
    for name in release_info["files"]:
        lines += [f"  - split: {name.removesuffix('.jsonl')}", f"    path: {name}"]
    lines.append("---")
    data_files = {name.removesuffix(".jsonl"): name for name in release_info["files"]}
    body = render_to_string(
        "cycle/release_readme.md",
        {
            "info": release_info,
            "task": task,
            "licence": licence or "unspecified",
            "non_commercial": task.cfg.is_non_commercial,
            "data_files": json.dumps(data_files),
            "generative": kind.generative,
            "generative_targets": generative_targets(release_info) if kind.generative else [],
            # The round's artefact probes as measured when this version was made (cycle.probes).
            "probes": [] if kind.generative else release_card_probes(task, release_info["round"]),
            # A red-teaming round's attack success rate, with its intervals and agreement per rubric
            # question (tasks.red_team_stats), as they stood when this version was made.
            "red_team": _red_team_figures(task, release_info["round"]) if kind.generative else None,
        },
    )
    return "\n".join(lines) + "\n\n" + body


# --- writing --------------------------------------------------------------------------------------


def release_dir(release: Release) -> Path:
    """The folder of ``release``'s files."""
    return Path(settings.DYNABENCH_RELEASES_DIR) / release.path


def release_files(release: Release) -> list[str]:
    """The names of ``release``'s files: its split files (as in ``release.json``), then the two others."""
    splits = [SPLIT_FILES[s] for s in SPLITS if s in (release.counts or {}).get("splits", {})]
    return [*splits, "release.json", "README.md"]


def _make_read_only(folder: Path) -> None:
    for item in folder.iterdir():
        item.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def _remove_orphan(folder: Path) -> None:
    """A version folder without its row (the process died between the rename and the commit): remove it."""
    folder.chmod(stat.S_IRWXU)
    for item in folder.iterdir():
        item.chmod(stat.S_IRUSR | stat.S_IWUSR)
    shutil.rmtree(folder)


@transaction.atomic
def create_release(*, round_: Round, user=None) -> tuple[Release, bool]:
    """Release ``round_``'s validated examples (this module's docstring); ``user`` is recorded as
    ``created_by`` (None for an operator's command without ``--actor``).

    Returns:
        ``(release, created)``: the new version, or the latest one (``created`` False) when the
        content is the same as the latest release's.

    Raises:
        ReleaseError: the round has no example to release.
    """
    # Lock the round's row: a second owner releasing the same round waits here, then finds this
    # release's hash and gets it back instead of a duplicate version.
    round_ = Round.objects.select_for_update().select_related("task").get(pk=round_.pk)
    task = round_.task
    by_split, duplicates = released_records(round_)
    files = {SPLIT_FILES[split]: _jsonl(records) for split, records in by_split.items() if records}
    if not files:
        raise ReleaseError(f"{task.slug} round {round_.number} has no validated-correct example to release.")
    sha = content_sha256(files)
    latest = Release.objects.filter(round=round_).order_by("-version").first()
    if latest is not None and latest.sha256 == sha:
        return latest, False

    version = latest.version + 1 if latest is not None else 1
    relative = f"{task.slug}/round-{round_.number}/v{version}"
    final = Path(settings.DYNABENCH_RELEASES_DIR) / relative
    counts = _counts(by_split, duplicates)
    info = {
        "format_version": RELEASE_FORMAT_VERSION,
        "export_format_version": EXPORT_FORMAT_VERSION,
        "task": task.slug,
        "round": round_.number,
        "version": version,
        "licence": task.cfg.licence,
        "sha256": sha,
        "counts": counts,
        "lineage": lineage(round_),
        "files": {
            name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for name, data in files.items()
        },
        "selection": {"status": RELEASED_STATUS, "source": RELEASED_SOURCE, "retracted": False},
    }
    release = Release.objects.create(
        task=task,
        round=round_,
        version=version,
        created_by=user,
        sha256=sha,
        licence=info["licence"],
        format_version=RELEASE_FORMAT_VERSION,
        counts=counts,
        lineage=info["lineage"],
        path=relative,
    )
    info["created_at"] = release.created_at.isoformat()
    info["created_by"] = user.get_username() if user is not None else ""

    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        _remove_orphan(final)
    work = Path(tempfile.mkdtemp(prefix=f".v{version}-", dir=final.parent))
    try:
        for name, data in files.items():
            (work / name).write_bytes(data)
        (work / "release.json").write_text(
            json.dumps(info, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        (work / "README.md").write_text(dataset_card(info, task), encoding="utf-8")
        _make_read_only(work)
        # One rename: readers see no folder, or the whole release.
        os.rename(work, final)
    except BaseException:
        if work.exists():
            _remove_orphan(work)
        raise
    return release, True
