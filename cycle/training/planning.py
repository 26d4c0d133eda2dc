"""Checking a request to train a target model before anything is read or trained: the recipe, the
model's name (which is also its folder's name) and the rounds (docs/architecture.md, "Training the
next target").
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from django.conf import settings

from models_registry.models import RegisteredModel
from models_registry.serving import BACKBONES
from tasks.models import Round, Task

#: The training recipes of ``engine.training.classifier`` (repeated here so that importing this module,
#: or the command, loads no torch; a test checks that both agree).
RECIPES = ("quick", "finetune")
#: The backbones a classifier can start from (``engine.runtime.backbones``, which loads no torch).
BACKBONE_CHOICES = tuple(BACKBONES)


#: Called with one line before each long step and after each result.
Progress = Callable[[str], None]
T = TypeVar("T")


class TargetTrainingError(Exception):
    """The target model cannot be trained as asked (unknown round, no examples...); the message says why."""


def say(progress: Progress | None, message: str) -> None:
    """Tell ``progress`` (when given) one line."""
    if progress is not None:
        progress(message)


def default_model_name(
    rounds: Sequence[int], recipe: str, backbone: str = "minilm", natural_share: float = 0.0
) -> str:
    """E.g. ``minilm-quick-r1-2-3``; ``mpnet-finetune-r1-2-nat30`` for the mpnet backbone with a 30%
    natural-data share."""
    name = f"{backbone}-{recipe}-r{'-'.join(str(n) for n in sorted(rounds))}"
    return name + (f"-nat{round(100 * natural_share)}" if natural_share > 0 else "")


#: A registered model name that is also a safe directory name: no path separator, no leading dot or dash.
MODEL_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", re.ASCII)


MODEL_NAME_RULE = (
    "1 to 100 characters: ASCII letters, digits, '.', '_' and '-', starting with a letter or digit"
)


def check_model_name_syntax(name: str) -> str:
    """Return ``name`` when it may be a trained model's name (and its directory name), else raise.

    Raises:
        TargetTrainingError: ``invalid model name '../x': use 1 to 100 characters: ...``.
    """
    if not isinstance(name, str) or not MODEL_NAME_RE.fullmatch(name):
        raise TargetTrainingError(f"invalid model name {name!r}: use {MODEL_NAME_RULE}")
    return name


def model_dir(task: Task, name: str) -> Path:
    """Where the trained model ``name`` of ``task`` lives: ``DYNABENCH_MODEL_DIR/<task slug>/<name>``."""
    return Path(settings.DYNABENCH_MODEL_DIR) / task.slug / check_model_name_syntax(name)


def check_model_name_free(task: Task, name: str) -> str:
    """Return ``name`` when it is valid and neither a registered model of ``task`` nor an existing
    directory under the task's model folder; else raise.

    Raises:
        TargetTrainingError: an invalid name (``check_model_name_syntax``), or
            ``a model named X already exists for task T; choose another name``.
    """
    folder = model_dir(task, name)
    if RegisteredModel.objects.filter(task=task, name=name).exists() or os.path.lexists(folder):
        raise TargetTrainingError(
            f"a model named {name} already exists for task {task.slug}; choose another name"
        )
    return name


def work_dir_pattern(name: str) -> str:
    """The glob of ``train_target_for_rounds``' work directories of model ``name`` (next to the model)."""
    return f".{check_model_name_syntax(name)}.training-*"


@dataclass(frozen=True)
class TrainingPlan:
    """What ``plan_training`` checked: the round numbers (sorted, distinct), the model name, the rounds
    to train on (by number) and the round the model is to become the target of (or None)."""

    numbers: list[int]
    name: str
    rounds: list[Round]
    target: Round | None


def plan_training(
    task: Task,
    rounds: Sequence[int],
    *,
    recipe: str,
    name: str | None,
    target_round: int | None,
    replace: bool,
    backbone: str = "minilm",
    natural_share: float = 0.0,
) -> TrainingPlan:
    """Check a training request before anything is read or trained, for classifiers and span models.

    The name comes first (default ``default_model_name(rounds, recipe, backbone, natural_share)``): a refused name reads,
    trains and creates nothing. With ``replace`` its syntax is checked, else also that it is free
    (``check_model_name_free``). Then every round of ``rounds`` and ``target_round`` must exist.

    Raises:
        TargetTrainingError: no round given, a bad or taken name, ``task X has no round(s) [7]``, or
            ``task X has no round 9 to make this model the target of``.
    """
    if not rounds:
        raise TargetTrainingError("give at least one round to train on")
    numbers = sorted(set(rounds))
    name = name or default_model_name(numbers, recipe, backbone, natural_share)
    if replace:
        check_model_name_syntax(name)
    else:
        check_model_name_free(task, name)
    round_objs = list(Round.objects.filter(task=task, number__in=numbers).order_by("number"))
    missing = sorted(set(numbers) - {r.number for r in round_objs})
    if missing:
        raise TargetTrainingError(f"task {task.slug} has no round(s) {missing}")
    target = None
    if target_round is not None:
        target = Round.objects.filter(task=task, number=target_round).first()
        if target is None:
            raise TargetTrainingError(
                f"task {task.slug} has no round {target_round} to make this model the target of"
            )
    return TrainingPlan(numbers=numbers, name=name, rounds=round_objs, target=target)
