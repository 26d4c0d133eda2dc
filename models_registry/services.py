"""Writes for registered models: register a local model directory, choose a round's target models."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from django.db import transaction

from tasks.models import Round, Task

from .models import RegisteredModel, RoundTarget
from .weights import count_parameters

PROBE_TEXT = "This is a probe input to check that the model answers."


class ModelRegistryError(Exception):
    """A registry operation the current state does not allow; the message says why."""


def _check_model(task: Task, path: str, allow_pickle: bool) -> tuple[dict, int | None, str]:
    """Load and probe a model directory; return (config facts, parameter count, error message or "")."""
    from .inference import InferenceError, clear_cache, get_classifier, texts_for_inputs

    facts: dict = {}
    try:
        clear_cache(path)  # a model retrained into the same directory must be read again
        classifier = get_classifier(path, allow_pickle=allow_pickle)
    except InferenceError as exc:
        return facts, None, str(exc)
    config = classifier.model.config
    facts = {
        "backbone": str(getattr(config, "backbone", "") or getattr(config, "_name_or_path", "") or ""),
        "preprocessing": dict(getattr(config, "preprocessing", None) or {}),
        "labels": list(classifier.labels),
        "model_type": getattr(config, "model_type", ""),
    }
    try:
        parameters = count_parameters(path)
    except (OSError, ValueError):
        parameters = sum(p.numel() for p in classifier.model.parameters())
    task_labels = task.cfg.labels
    if sorted(classifier.labels) != sorted(task_labels):
        return (
            facts,
            parameters,
            f"model labels {classifier.labels} do not match task labels {task_labels}",
        )
    fields = task.cfg.model_input_fields
    try:
        texts = texts_for_inputs(fields, [dict.fromkeys(fields, PROBE_TEXT)])
        [output] = classifier.predict_batch(texts)
    except InferenceError as exc:
        return facts, parameters, f"probe input failed: {exc}"
    total = sum(output["probabilities"].values())
    if output["label"] not in task_labels or abs(total - 1.0) > 1e-3:
        return facts, parameters, f"probe input gave an invalid output: {output}"
    return facts, parameters, ""


def register_local_model(
    *,
    task: Task,
    name: str,
    path: str | Path,
    card: dict,
    owner=None,
    allow_pickle: bool = False,
) -> RegisteredModel:
    """Register (or re-register) the ``save_pretrained`` directory ``path`` as model ``name`` of ``task``.

    Loads the model, checks that its label set equals the task's labels, counts the parameters from the
    weights, and runs one probe input. Idempotent on (task, name): a second call updates path, card,
    owner and the check results.

    Returns:
        The model with status ``ready``, or ``failed`` with ``error_message`` saying why (e.g.
        ``"model labels ['a', 'b'] do not match task labels ['hateful', 'not-hateful']"`` or
        ``"model directory /x does not exist"``). Never raises for a bad model.
    """
    path = str(path)
    facts, parameters, error = _check_model(task, path, allow_pickle)
    full_card = dict(card)
    for key in ("backbone", "preprocessing", "labels"):
        if key in facts:
            full_card.setdefault(key, facts[key])
    if parameters is not None:
        full_card["parameter_count"] = parameters
    defaults = {
        "path": path,
        "card": full_card,
        "source": RegisteredModel.Source.LOCAL_DIR,
        "backbone": str(full_card.get("backbone", ""))[:200],
        "parameter_count": parameters,
        "status": RegisteredModel.Status.FAILED if error else RegisteredModel.Status.READY,
        "error_message": error,
        "allow_pickle": allow_pickle,
    }
    if owner is not None:
        defaults["owner"] = owner
    with transaction.atomic():
        model, _ = RegisteredModel.objects.select_for_update().update_or_create(
            task=task, name=name, defaults=defaults
        )
    return model


@transaction.atomic
def set_round_targets(*, round: Round, models: Sequence[RegisteredModel]) -> list[RoundTarget]:
    """Make ``models`` the round's target models, in this order (position 0, 1, ...), replacing the old set.

    Raises:
        ModelRegistryError: a model of another task, a model that is not ready, or the same model twice.
    """
    ids = [m.pk for m in models]
    if len(set(ids)) != len(ids):
        raise ModelRegistryError("a model can be a round's target only once")
    for model in models:
        if model.task_id != round.task_id:
            raise ModelRegistryError(f"model {model.name} belongs to another task than {round}")
        if model.status != RegisteredModel.Status.READY:
            raise ModelRegistryError(
                f"model {model.name} is not ready ({model.status}): {model.error_message}"
            )
    # Lock the round so two concurrent calls do not interleave their delete and insert.
    Round.objects.select_for_update().filter(pk=round.pk).first()
    RoundTarget.objects.filter(round=round).exclude(model_id__in=ids).delete()
    targets = []
    for position, model in enumerate(models):
        target, _ = RoundTarget.objects.update_or_create(
            round=round, model=model, defaults={"position": position}
        )
        targets.append(target)
    return targets


@transaction.atomic
def add_round_target(*, round: Round, model: RegisteredModel) -> RoundTarget:
    """Add ``model`` as the round's last target (no-op if it already is one); see ``set_round_targets``."""
    current = [t.model for t in RoundTarget.objects.filter(round=round).select_related("model")]
    if model.pk in {m.pk for m in current}:
        return RoundTarget.objects.get(round=round, model=model)
    set_round_targets(round=round, models=[*current, model])
    return RoundTarget.objects.get(round=round, model=model)
