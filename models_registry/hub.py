"""Download a model from the Hugging Face hub into a model folder, failing fast when no hub is reachable."""

from __future__ import annotations

import re
from pathlib import Path

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
SAFE_PATTERNS = ["*.safetensors", "*.json", "*.txt", "*.model", "*.md"]
PICKLE_PATTERNS = ["*.bin", "*.pt", "*.pth", "*.ckpt"]
ETAG_TIMEOUT_SECONDS = 10.0


class HubDownloadError(Exception):
    """The model could not be downloaded; the message says why (stored on the model)."""


def is_valid_hub_id(hub_id: str) -> bool:
    """Whether ``hub_id`` looks like ``name`` or ``owner/name`` (letters, digits, ``. _ -``)."""
    return bool(HUB_ID.match(hub_id or "")) and ".." not in hub_id


def download_hub_model(
    hub_id: str,
    target: str | Path,
    *,
    revision: str | None = None,
    allow_pickle: bool = False,
    endpoint: str | None = None,
) -> Path:
    """Download the files of hub model ``hub_id`` (weights, config, tokenizer) into folder ``target``.

    Only safetensors weights are fetched unless ``allow_pickle``. Each HTTP request has a timeout
    (``ETAG_TIMEOUT_SECONDS`` for metadata, huggingface_hub's ``HF_HUB_DOWNLOAD_TIMEOUT`` per read),
    so an unreachable hub fails in seconds, not hours.

    Raises:
        HubDownloadError: offline mode (HF_HUB_OFFLINE), a network error, an unknown, private or
            gated model, or a revision that does not exist.
    """
    prefix = "the model hub cannot be reached from this machine"
    try:
        import huggingface_hub
        from huggingface_hub import errors
    except ImportError as exc:  # pragma: no cover - installed with transformers
        raise HubDownloadError(f"{prefix} (huggingface_hub is not installed): {exc}") from exc
    if not is_valid_hub_id(hub_id):
        raise HubDownloadError(f"{hub_id!r} is not a hub model id (expected owner/name)")
    if huggingface_hub.is_offline_mode():
        raise HubDownloadError(
            f"{prefix} (HF_HUB_OFFLINE is set): {hub_id} was not downloaded; put the model on this "
            "machine and upload it as a zip instead"
        )
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    patterns = SAFE_PATTERNS + (PICKLE_PATTERNS if allow_pickle else [])
    try:
        huggingface_hub.snapshot_download(
            hub_id,
            revision=revision or None,
            local_dir=str(target),
            allow_patterns=patterns,
            etag_timeout=ETAG_TIMEOUT_SECONDS,
            endpoint=endpoint,
            max_workers=2,
        )
    except errors.OfflineModeIsEnabled as exc:
        raise HubDownloadError(f"{prefix} (HF_HUB_OFFLINE is set): {exc}") from exc
    except (errors.RepositoryNotFoundError, errors.GatedRepoError) as exc:
        raise HubDownloadError(f"the hub has no public model {hub_id!r} (unknown, private or gated)") from exc
    except errors.RevisionNotFoundError as exc:
        raise HubDownloadError(f"the hub model {hub_id!r} has no revision {revision!r}") from exc
    except errors.HfHubHTTPError as exc:
        raise HubDownloadError(f"the hub refused the download of {hub_id!r}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - connection errors come from httpx/OSError/LocalEntryNotFound
        raise HubDownloadError(f"{prefix} (network error): {type(exc).__name__}: {exc}") from exc
    return target
