"""Writes for registered models: register a model (local directory, uploaded zip, hub id, remote
endpoint), check it, and choose a round's target models.

Registration paths and the status each leaves the model in:

* ``register_local_model``: checked inline, ``ready`` or ``failed``.
* ``register_uploaded_model``: the zip is checked and extracted inline (a refused zip leaves a
  ``failed`` model with the reason); then ``uploaded`` and the check job is queued.
* ``register_hub_model`` and ``register_endpoint_model``: ``uploaded`` and the check job is queued; the
  job downloads (hub) or probes (endpoint).

The check job (``jobs.check_model``) moves ``uploaded`` -> ``checking`` -> ``ready`` or ``failed`` and
keeps the failure's message in ``error_message``. A stored message never names a server path or the
model's folder (``model_files.without_server_paths``); the full detail is in the server log.

Visibility: uploads, hub ids and endpoints are registered unpublished (their owner publishes them once
they are happy with them); a local directory is the platform's own registration (a target trained by
a training job or the demo) and is published when its check passes.

A new registration may take the name of a ``failed`` model of the same owner: the failed one (and its
folder) is replaced, so a fixed zip can be uploaded under the name that was refused.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from core.job_queue import enqueue
from engine.endpoints.addresses import EndpointAddressRefused, check_endpoint_url
from engine.endpoints.calls import generate_secret
from engine.runtime import classifier as runtime_classifier
from engine.runtime.classifier import InferenceError
from engine.runtime.runtimes import RUNTIMES, TORCH, onnx_file
from engine.runtime.runtimes import label as runtime_label
from models_registry import inference
from models_registry.archives import ArchiveRefused, extract_model_zip
from models_registry.checking.folder import PROBE_TEXT, check_model_folder, public_error
from models_registry.checking.inputs import held_apart_inputs
from models_registry.hub import HubDownloadError, download_hub_model, is_valid_hub_id
from models_registry.models import RegisteredModel
from models_registry.names import model_name_problem
from tasks.models import Task

logger = logging.getLogger(__name__)

MAX_ERROR = 5000
CARD_FIELDS = ("backbone", "licence", "training_data", "paper_link", "description")


class ModelRegistryError(Exception):
    """A registry operation the current state does not allow; the message says why."""


def register_local_model(
    *,
    task: Task,
    name: str,
    path: str | Path,
    card: dict,
    owner=None,
    allow_pickle: bool = False,
    is_published: bool | None = None,
    check_inputs: list[dict] | None = None,
    check_targets: list | None = None,
) -> RegisteredModel:
    """Register (or re-register) the ``save_pretrained`` directory ``path`` as model ``name`` of ``task``.

    Loads the model, checks that its weights fill its architecture, that its label set equals the
    task's labels, counts the parameters from the weights, and runs one probe input. Then exports it to
    ONNX and chooses its runtime (``prepare_runtime``). Idempotent on (task, name): a second call
    updates path, card, owner and the check results.

    Args:
        is_published: None (default) publishes a new model when its check passes (a local directory is
            the platform's own registration: a trained round target, the demo) and keeps an existing
            model's flag; True or False sets it.
        check_inputs: held-apart model inputs (field -> text) to check the ONNX export on, e.g. a trained
            model's dev and test examples; default ``checking.inputs.held_apart_inputs(task)``.
        check_targets: their gold targets, aligned with ``check_inputs`` (labels judge int8 on accuracy).

    Returns:
        The model with status ``ready``, or ``failed`` with ``error_message`` saying why (e.g.
        ``"model labels ['a', 'b'] do not match task labels ['hateful', 'not-hateful']"`` or
        ``"the model directory does not exist on the server (its files are gone)"``). Never raises
        for a bad model.
    """
    path = str(path)
    facts, parameters, error = check_model_folder(task, path, allow_pickle)
    full_card = dict(card)
    for key in ("backbone", "preprocessing", "labels"):
        if key in facts:
            full_card.setdefault(key, facts[key])
    if parameters is not None:
        full_card["parameter_count"] = parameters
    runtime = RegisteredModel._meta.get_field("runtime").default
    if not error:
        runtime, full_card["runtime"] = prepare_runtime(task, path, allow_pickle, check_inputs, check_targets)
    defaults = {
        "path": path,
        "card": full_card,
        "source": RegisteredModel.Source.LOCAL_DIR,
        "backbone": str(full_card.get("backbone", ""))[:200],
        "parameter_count": parameters,
        "status": RegisteredModel.Status.FAILED if error else RegisteredModel.Status.READY,
        "error_message": error,
        "allow_pickle": allow_pickle,
        "runtime": runtime,
    }
    if owner is not None:
        defaults["owner"] = owner
    if is_published is not None:
        defaults["is_published"] = is_published
    create_defaults = {**defaults, "is_published": not error if is_published is None else is_published}
    with transaction.atomic():
        model, _ = RegisteredModel.objects.select_for_update().update_or_create(
            task=task, name=name, defaults=defaults, create_defaults=create_defaults
        )
    return model


def prepare_runtime(
    task: Task,
    path: str,
    allow_pickle: bool,
    check_inputs: list[dict] | None = None,
    check_targets: list | None = None,
    *,
    again: bool = False,
    pinned: str = "",
) -> tuple[str, dict]:
    """Export a checked model folder to ONNX, check it against PyTorch and choose its runtime
    (``onnx_export.export_and_check``, docs/onnx.md).

    Args:
        check_inputs / check_targets: as in ``register_local_model``.
        again: checking a model this platform exported before: without ``check_inputs``, reuse the
            held-apart inputs of that export (``onnx_export.saved_check_inputs``) when they are there.
        pinned: the runtime a task owner pinned (``set_runtime``), kept when it is torch or its new
            check passes; otherwise the pin is dropped and the block says so.

    Returns:
        ``(runtime, card block)``: the runtime for ``RegisteredModel.runtime`` and the report for
        ``card["runtime"]`` (``{"runtime", "preferred", "checks", "message", "export_seconds"}``).
        Never raises for a model that cannot be exported: it stays on torch and the block says why.
    """
    from engine.runtime.onnx_export import (  # imports torch and onnxruntime
        export_and_check,
        saved_check_inputs,
    )

    saved = saved_check_inputs(path) if again and not check_inputs else None
    note = ""
    if saved is not None:
        # Checked again: the same held-apart inputs as the last export (a trained target's labelled
        # dev and test examples), not the probe sentences, so the runtime is judged as strictly.
        texts, targets = saved
    else:
        inputs = check_inputs if check_inputs else held_apart_inputs(task)
        targets = check_targets if check_inputs else None
        try:
            texts = runtime_classifier.texts_for_inputs(task.cfg.model_input_fields, inputs)
        except InferenceError as exc:
            texts, note = [], str(exc)
    report = export_and_check(path, texts, targets=targets, allow_pickle=allow_pickle)
    if note:
        report.message = f"{report.message} (the check inputs were unusable: {note})"
    if pinned:
        _keep_pin(report, pinned)
    # The check loaded every runtime; keep only the one that will serve.
    for other in RUNTIMES:
        if other != report.runtime:
            runtime_classifier.clear_cache(path, runtime=other)
    return report.runtime, public_card_block(report.as_card(), path)


def _keep_pin(report, pinned: str) -> None:
    """Serve ``pinned`` instead of the runtime the check chose when it is still allowed: torch, or an ONNX
    runtime whose new check passed (the rule of ``pinnable_runtimes``); else say the pin was dropped."""
    if pinned == TORCH or (report.checks.get(pinned) or {}).get("passed"):
        message = f"pinned to {runtime_label(pinned)} by a task owner"
        if pinned == report.runtime:
            message += f"; {report.message}" if report.message else ""  # why the check chose it too
        else:  # what the check alone would serve, and its reason
            message += f"; the check alone would serve {runtime_label(report.runtime)}" + (
                f" ({report.message})" if report.message else ""
            )
        report.message, report.runtime, report.pinned = message, pinned, True
    else:
        report.message = f"the pin to {runtime_label(pinned)} was dropped: its check no longer passes" + (
            f"; {report.message}" if report.message else ""
        )


def runtime_refusal(model: RegisteredModel, runtime: str) -> str:
    """Why ``set_runtime`` would refuse to pin ``runtime`` (one of ``RUNTIMES``) on ``model``, or "" when
    it may: torch for any model with weights here, an ONNX runtime when its graph file is in the model's
    folder and its last check (``card["runtime"]["checks"]``) passed. A remote endpoint has no runtime
    here."""
    if model.source == RegisteredModel.Source.ENDPOINT:
        return f"{model.name} is a remote endpoint: its runtime is not ours to choose"
    if not model.path:
        return f"{model.name} has no weights on this server"
    if runtime == TORCH:
        return ""
    if not onnx_file(model.path, runtime).is_file():
        why = "its graph file is missing (check the model again to export it)"
    else:
        block = (model.card or {}).get("runtime")
        checks = (block.get("checks") or {}) if isinstance(block, dict) else {}
        check = checks.get(runtime)
        if isinstance(check, dict) and check.get("passed"):
            return ""
        why = "its check against PyTorch did not pass (see the model's card)"
    return f"{model.name} cannot be served on {runtime_label(runtime)}: {why}"


def pinnable_runtimes(model: RegisteredModel) -> list[str]:
    """The runtimes ``set_runtime`` accepts for ``model`` (``runtime_refusal`` says why not), in
    ``RUNTIMES`` order; empty for a remote endpoint."""
    return [runtime for runtime in RUNTIMES if not runtime_refusal(model, runtime)]


def set_runtime(model: RegisteredModel, runtime: str) -> RegisteredModel:
    """Pin the runtime ``model`` is served and evaluated on (a task owner's choice; docs/onnx.md,
    "Pinning a runtime"). The card's runtime block records the pin (``pinned: true``) and "Check
    again" keeps it while it stays allowed. Saving a ready model requests its evaluations again: a Score
    measured on another runtime is redone (``leaderboards.scheduling``).

    Returns:
        The model as saved (unchanged, with no save, when it already runs on ``runtime`` pinned).

    Raises:
        ModelRegistryError: an unknown runtime, a model that is not ready or is being checked again,
            or one that ``runtime_refusal`` names (a remote endpoint, no weights here, no graph, or a
            check that did not pass); nothing is changed.
    """
    if runtime not in RUNTIMES:
        raise ModelRegistryError(f"unknown runtime {runtime!r}; expected one of {list(RUNTIMES)}")
    with transaction.atomic():
        # Locked: two owners pinning at once, or a check finishing meanwhile, do not mix their cards.
        model = RegisteredModel.objects.select_for_update().get(pk=model.pk)
        if model.source != RegisteredModel.Source.ENDPOINT and model.status != RegisteredModel.Status.READY:
            raise ModelRegistryError(f"{model.name} is not ready ({model.status}): check it first")
        if model.recheck != RegisteredModel.Recheck.NONE:
            # The check's outcome would overwrite the pin; it decides the runtime from scratch anyway.
            raise ModelRegistryError(
                f"{model.name} is being checked again: pin its runtime once the check ends"
            )
        if refusal := runtime_refusal(model, runtime):
            raise ModelRegistryError(refusal)
        card = dict(model.card or {})
        block = dict(card["runtime"]) if isinstance(card.get("runtime"), dict) else {}
        if model.runtime == runtime and block.get("pinned"):
            return model
        previous = model.runtime
        block.update(
            runtime=runtime, pinned=True, message=f"pinned to {runtime_label(runtime)} by a task owner"
        )
        card["runtime"] = block
        model.runtime, model.card = runtime, card
        model.save(update_fields=["runtime", "card", "updated_at"])
    if previous != runtime:
        runtime_classifier.clear_cache(model.path, runtime=previous)
    return model


def public_card_block(block: dict, path: str) -> dict:
    """``block`` with its message stripped of server paths (it is shown on the model card)."""
    block = dict(block)
    block["message"] = public_error(block.get("message", ""), path)
    return block


# --- uploads, hub ids and endpoints ------------------------------------------------------------------


def new_model_dir(task: Task) -> Path:
    """A fresh folder path ``DYNABENCH_MODEL_DIR/<task slug>/<uuid>/`` (not created)."""
    return Path(settings.DYNABENCH_MODEL_DIR) / task.slug / uuid.uuid4().hex


def _clean_card(card: dict | None) -> dict:
    """The card as given, minus a typed parameter count (it is counted from the weights, never typed)."""
    card = {k: v for k, v in (card or {}).items() if k != "parameter_count"}
    return card


def _is_platform_folder(path: str) -> bool:
    """True if ``path`` is a folder the registry made under ``DYNABENCH_MODEL_DIR`` (safe to delete)."""
    if not path:
        return False
    root = Path(settings.DYNABENCH_MODEL_DIR).resolve()
    return Path(path).resolve().is_relative_to(root) and Path(path).resolve() != root


def _replace_failed(task: Task, name: str, owner) -> None:
    """Delete ``owner``'s failed model ``name`` of ``task`` (in the caller's transaction) so the name is free.

    Its folder (when the registry made it) is removed once the transaction commits.

    Raises:
        ModelRegistryError: the name belongs to another owner's model or to a model that is not failed,
            or the failed model is still referenced (a round target, scores, predictions).
    """
    existing = RegisteredModel.objects.select_for_update().filter(task=task, name=name).first()
    if existing is None:
        return
    taken = f"task {task.slug} already has a model named {name!r}"
    if owner is None or existing.owner_id != owner.pk:
        raise ModelRegistryError(f"{taken}; choose another name")
    if existing.status != RegisteredModel.Status.FAILED:
        raise ModelRegistryError(
            f"{taken} ({existing.get_status_display().lower()}); choose another name, or delete that model "
            "first"
        )
    folder = existing.path if existing.source != RegisteredModel.Source.LOCAL_DIR else ""
    try:
        with transaction.atomic():
            existing.delete()
    except ProtectedError as exc:
        raise ModelRegistryError(
            f"{taken}; it failed but still has scores, predictions or round targets, so it cannot be "
            "replaced: choose another name"
        ) from exc
    logger.info("model %s (%s) of %s replaced by a new registration", existing.name, name, task.slug)
    if _is_platform_folder(folder):
        transaction.on_commit(lambda: shutil.rmtree(folder, ignore_errors=True))


def _create_model(
    *, task: Task, name: str, owner, source: str, card: dict | None, **fields
) -> RegisteredModel:
    """Create the model row (status ``uploaded``), replacing a failed model of the same name and owner.

    The model is unpublished unless ``fields`` says ``is_published=True``.

    Raises:
        ModelRegistryError: no name, a name against ``names.model_name_problem`` (a control character),
            or the name is taken (see ``_replace_failed``).
    """
    name = (name or "").strip()
    if not name:
        raise ModelRegistryError("a model needs a name")
    problem = model_name_problem(name)
    if problem:
        raise ModelRegistryError(problem)
    card = _clean_card(card)
    fields.setdefault("is_published", False)
    try:
        with transaction.atomic():
            _replace_failed(task, name, owner)
            return RegisteredModel.objects.create(
                task=task,
                name=name,
                owner=owner,
                source=source,
                card=card,
                backbone=str(card.get("backbone", ""))[:200],
                status=RegisteredModel.Status.UPLOADED,
                **fields,
            )
    except IntegrityError as exc:  # a concurrent registration took the name between check and insert
        raise ModelRegistryError(f"task {task.slug} already has a model named {name!r}") from exc


def _fail(model: RegisteredModel, message: str) -> RegisteredModel:
    model.status = RegisteredModel.Status.FAILED
    model.error_message = message[:MAX_ERROR]
    model.save(update_fields=["status", "error_message", "updated_at"])
    return model


def _upload_size(fileobj: BinaryIO) -> int:
    size = getattr(fileobj, "size", None)
    if isinstance(size, int):
        return size
    position = fileobj.tell()
    fileobj.seek(0, 2)
    size = fileobj.tell()
    fileobj.seek(position)
    return size


def register_uploaded_model(
    *,
    task: Task,
    name: str,
    owner,
    fileobj: BinaryIO,
    card: dict | None = None,
    allow_pickle: bool = False,
    is_published: bool = False,
    is_anonymous: bool = False,
) -> RegisteredModel:
    """Register a zipped ``save_pretrained`` directory as model ``name`` of ``task`` and queue its check.

    Args:
        fileobj: the zip, seekable (a Django ``UploadedFile`` or an open file). At most
            ``settings.DYNABENCH_MODEL_UPLOAD_MAX_BYTES`` bytes, and at most as many once unpacked.
        card: model card fields (``CARD_FIELDS``: backbone, licence, training_data, paper_link,
            description); a ``parameter_count`` in it is ignored (it is counted from the weights).
        allow_pickle: accept pickle checkpoints (``pytorch_model.bin``); only a task owner may set it.
        is_published, is_anonymous: the model's visibility flags (the API lets an uploader choose them);
            unpublished by default: the owner publishes it once it is ready.

    The files go into ``DYNABENCH_MODEL_DIR/<task slug>/<uuid>/`` (``archives.extract_model_zip``, which
    refuses escaping paths, links, nesting, too many files and zip bombs). A refused upload leaves a
    ``failed`` model whose ``error_message`` says why, and no files. An accepted one is ``uploaded``
    and ``jobs.check_model`` is queued when the transaction commits (inline when jobs are sync).

    Returns:
        The model (re-read it after the commit to see the check's outcome).

    A ``failed`` model of the same name and owner is replaced (``_create_model``): upload a fixed zip
    under the name that was refused.

    Raises:
        ModelRegistryError: no name, or the task already has a model of that name that is not this
            owner's failed one (nothing created).
    """

    target = new_model_dir(task)
    model = _create_model(
        task=task,
        name=name,
        owner=owner,
        source=RegisteredModel.Source.UPLOAD,
        card=card,
        path=str(target),
        allow_pickle=allow_pickle,
        is_published=is_published,
        is_anonymous=is_anonymous,
    )
    limit = int(settings.DYNABENCH_MODEL_UPLOAD_MAX_BYTES)
    try:
        size = _upload_size(fileobj)
        if size > limit:
            raise ArchiveRefused(f"the upload is {size:,} bytes; the limit is {limit:,} bytes")
        fileobj.seek(0)
        report = extract_model_zip(fileobj, target, max_bytes=limit, allow_pickle=allow_pickle)
    except ArchiveRefused as exc:
        return _fail(model, f"upload refused: {exc}")
    except OSError as exc:
        logger.exception("storing the upload of model %s in %s failed", model.pk, target)
        shutil.rmtree(target, ignore_errors=True)
        return _fail(model, public_error(f"upload could not be stored: {exc}", target))
    except Exception as exc:  # noqa: BLE001 - a model left "uploaded" forever would hide the failure
        logger.exception("extracting the upload of model %s failed", model.pk)
        shutil.rmtree(target, ignore_errors=True)
        return _fail(
            model, public_error(f"upload could not be unpacked: {type(exc).__name__}: {exc}", target)
        )
    if report.skipped_pickles:
        model.card = {**model.card, "skipped_files": report.skipped_pickles}
        model.save(update_fields=["card", "updated_at"])
    request_check(model)
    return model


def register_hub_model(
    *,
    task: Task,
    name: str,
    hub_id: str,
    owner=None,
    card: dict | None = None,
    revision: str = "",
    allow_pickle: bool = False,
) -> RegisteredModel:
    """Register hub model ``hub_id`` (``owner/name``) as model ``name`` of ``task`` and queue its check.

    The check job downloads it with ``huggingface_hub.snapshot_download`` into
    ``DYNABENCH_MODEL_DIR/<task slug>/<uuid>/`` (safetensors only unless ``allow_pickle``), then checks
    it like an upload. Where no hub can be reached (``HF_HUB_OFFLINE``, no network) the model ends
    ``failed`` within seconds with "the model hub cannot be reached from this machine (...)".

    Raises:
        ModelRegistryError: an invalid hub id, no name, or a name the task already uses.
    """

    hub_id = (hub_id or "").strip()
    if not is_valid_hub_id(hub_id):
        raise ModelRegistryError(f"{hub_id!r} is not a hub model id (expected owner/name)")
    card = {**_clean_card(card), "hub_id": hub_id}
    if revision:
        card["hub_revision"] = revision
    model = _create_model(
        task=task,
        name=name,
        owner=owner,
        source=RegisteredModel.Source.HUB,
        card=card,
        path=str(new_model_dir(task)),
        allow_pickle=allow_pickle,
    )
    request_check(model)
    return model


def checked_endpoint_url(url: str) -> str:
    """``url`` stripped of surrounding spaces, if it is an http(s) URL whose host remote endpoints may use
    (``endpoints.addresses.check_endpoint_url``); the one check of every remote model's URL, classifier
    endpoint or chat server.

    Raises:
        ModelRegistryError: not an http(s) URL (the message quotes at most 200 characters of it), or a
            host on an address the endpoint rule refuses.
    """
    url = (url or "").strip()
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError as exc:
        raise ModelRegistryError(f"{url[:200]!r} is not an http(s) URL") from exc
    try:
        check_endpoint_url(url)
    except EndpointAddressRefused as exc:
        raise ModelRegistryError(str(exc)) from exc
    return url


def register_endpoint_model(
    *, task: Task, name: str, url: str, owner=None, card: dict | None = None
) -> tuple[RegisteredModel, str]:
    """Register a remote inference endpoint as model ``name`` of ``task`` and queue its probe.

    A signing secret is generated here and returned: show it to the owner once (it is stored to sign
    requests, never shown again). The protocol is in ``engine.endpoints.calls``. The model has no
    weights here, so its parameter count stays None.

    Returns:
        (model, secret).

    Raises:
        ModelRegistryError: a URL that is not http(s) or whose host is on an address remote endpoints
            may not use (``endpoint_addresses.check_endpoint_url``), no name, or a name the task already
            uses.
    """

    url = checked_endpoint_url(url)
    secret = generate_secret()
    model = _create_model(
        task=task,
        name=name,
        owner=owner,
        source=RegisteredModel.Source.ENDPOINT,
        card=card,
        endpoint_url=url,
        endpoint_secret=secret,
    )
    request_check(model)
    return model, secret


def check_again(model: RegisteredModel) -> None:
    """Queue the check of ``model`` again, e.g. after a failed hub download or to re-export its graph.

    A ready model stays ready while it is checked again (``recheck`` ``queued`` then ``running``): it
    keeps serving annotators and its evaluations, and its leaderboard row stays; the check's outcome
    replaces its status, card and runtime when it ends (``failed`` takes it offline then). Any other
    model goes back to ``uploaded`` (``request_check``).

    Raises:
        ModelRegistryError: the model is being checked now (or its check again is queued), or it is an
            upload whose folder does not exist (a refused zip keeps no files): nothing could be checked,
            so its status and its reason are kept; a fixed zip uploaded under the same name replaces it.
    """
    if model.status == RegisteredModel.Status.CHECKING:
        raise ModelRegistryError(f"{model.name} is being checked now")
    if model.source == RegisteredModel.Source.UPLOAD and not (model.path and Path(model.path).is_dir()):
        raise ModelRegistryError(
            f"{model.name} has no files to check (its upload was refused or its files are gone); upload "
            "a fixed zip under the same name to replace it"
        )
    if model.status != RegisteredModel.Status.READY:
        request_check(model)
        return
    # Conditional: two owners pressing "Check again" at once queue one check.
    queued = RegisteredModel.objects.filter(
        pk=model.pk, status=RegisteredModel.Status.READY, recheck=RegisteredModel.Recheck.NONE
    ).update(recheck=RegisteredModel.Recheck.QUEUED, updated_at=timezone.now())
    if not queued:
        raise ModelRegistryError(
            f"{model.name} already has a check queued or running (it keeps serving meanwhile)"
        )
    model.recheck = RegisteredModel.Recheck.QUEUED
    model_id = model.pk
    transaction.on_commit(lambda: enqueue_check(model_id))


def enqueue_check(model_id: int) -> None:
    """Queue ``jobs.check_model(model_id)`` now (``request_check`` queues it on commit)."""
    enqueue("models_registry.jobs.check_model", model_id, task_name=f"check-model-{model_id}")


def request_check(model: RegisteredModel) -> None:
    """Set the model to ``uploaded`` and queue ``jobs.check_model`` once the transaction commits."""
    RegisteredModel.objects.filter(pk=model.pk).update(
        status=RegisteredModel.Status.UPLOADED,
        error_message="",
        recheck=RegisteredModel.Recheck.NONE,
        updated_at=timezone.now(),
    )
    model.status, model.error_message = RegisteredModel.Status.UPLOADED, ""
    model.recheck = RegisteredModel.Recheck.NONE
    model_id = model.pk
    transaction.on_commit(lambda: enqueue_check(model_id))


def run_check(model: RegisteredModel) -> tuple[str, str]:
    """Check a model by its source; store the outcome. Called by ``jobs.check_model`` (status ``checking``,
    or ``ready`` with ``recheck`` ``running``: the model serves until this saves).

    Hub models are downloaded first (not again when ready: a ready model is checked on its files).
    Files on disk: label set, parameter count (from the weights) and a probe input, as
    ``register_local_model``. Endpoints: one probe input through ``inference.predict``.

    Returns:
        (status, error message) as stored: ``("ready", "")`` or ``("failed", "<why>")``.
    """

    task = model.task
    updates: dict = {}
    error = ""
    if model.source == RegisteredModel.Source.ENDPOINT:
        fields = task.cfg.model_input_fields
        try:
            inference.predict(model, [dict.fromkeys(fields, PROBE_TEXT)])
        except InferenceError as exc:
            error = f"probe input failed: {exc}"
        updates["parameter_count"] = None
    else:
        # A ready hub model checked again is checked on the files it serves, not downloaded again
        # into the folder it is served from.
        downloaded = model.status == RegisteredModel.Status.READY and Path(model.path or "").is_dir()
        if model.source == RegisteredModel.Source.HUB and not downloaded:
            try:
                download_hub_model(
                    model.card.get("hub_id", ""),
                    model.path,
                    revision=model.card.get("hub_revision") or None,
                    allow_pickle=model.allow_pickle,
                )
            except HubDownloadError as exc:
                error = str(exc)
        if not error:
            facts, parameters, error = check_model_folder(task, model.path, model.allow_pickle)
            card = dict(model.card)
            for key in ("backbone", "preprocessing", "labels"):
                if facts.get(key):
                    card.setdefault(key, facts[key])
            if parameters is not None:
                card["parameter_count"] = parameters
            if not error:
                # A model this platform checked before is checked again on the same held-apart inputs
                # (kept in its onnx/ folder); a new upload's own onnx/ folder is never read.
                block = model.card.get("runtime")
                again = isinstance(block, dict)
                pinned = model.runtime if again and block.get("pinned") else ""
                updates["runtime"], card["runtime"] = prepare_runtime(
                    task, model.path, model.allow_pickle, again=again, pinned=pinned
                )
            updates.update(
                card=card,
                parameter_count=parameters,
                backbone=model.backbone or str(card.get("backbone", ""))[:200],
            )
    status = RegisteredModel.Status.FAILED if error else RegisteredModel.Status.READY
    error = public_error(error, model.path)
    updates.update(status=status, error_message=error[:MAX_ERROR], recheck=RegisteredModel.Recheck.NONE)
    for key, value in updates.items():
        setattr(model, key, value)
    model.save(update_fields=[*updates, "updated_at"])
    return status, error
