"""What an example must do to meet its round's goal, chosen once from the task's mode: fool the target
(``model_wrong``, the default) or, in uncertainty mode (``tasks.uncertainty``), make it unsure
(``model_unsure``). The validation queue serves the examples that meet it (unless the task validates
every example), and the crowd ledger's bonus pays them."""

from __future__ import annotations

from django.db.models import Q

from tasks.config import TaskConfig

from .models import Example


def goal_met_q(cfg: TaskConfig) -> Q:
    """The filter on ``Example`` of the examples that met the goal of a task whose config is ``cfg``."""
    return Q(model_unsure=True) if cfg.uncertainty is not None else Q(model_wrong=True)


def goal_met(example: Example, cfg: TaskConfig) -> bool:
    """True when ``example`` met the goal of its task (whose config is ``cfg``)."""
    return (example.model_unsure if cfg.uncertainty is not None else example.model_wrong) is True


def goal_words(cfg: TaskConfig, *, present: bool = False) -> str:
    """The goal as the end of a sentence: "fooled the model" or "made the model unsure" (``present``:
    "fool the model", "make the model unsure")."""
    if cfg.uncertainty is not None:
        return "make the model unsure" if present else "made the model unsure"
    return "fool the model" if present else "fooled the model"
