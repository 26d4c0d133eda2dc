"""The registry checks of a task config's ``assistant`` section (``tasks.config_checks``): each arm's
model must be a ready generative model of the registry; a classifier is refused with a clear message."""

from __future__ import annotations

from .services import AssistantError, assistant_model


def assistant_models(config: dict, task=None) -> list[str]:
    """One problem per arm whose ``model`` is missing, not generative or not ready."""
    problems = []
    for i, arm in enumerate((config.get("assistant") or {}).get("arms", [])):
        if "model" not in arm:
            continue
        try:
            assistant_model(arm["model"])
        except AssistantError as exc:
            problems.append(f"config['assistant']['arms'][{i}]['model']: {exc.message}")
    return problems
