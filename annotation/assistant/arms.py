"""Which arm of a round's annotation-assistant study a person is in: assigned by the server the first
time they come to write, kept for the round (docs/domain.md, "Annotation assistants").

**Permuted blocks.** The arms' shares (whole numbers, config ``assistant.arms[].share``) make a block:
with shares none 1 and smollm2 1 a block holds each arm once; with 1 and 2, one "none" and two
"smollm2". Each block's order is shuffled, and the k-th person to join takes place ``k mod size`` of
block ``k div size``, so after every whole block the arms hold exactly their shares, and in between no
arm is ahead of its share by more than one block (Rosenberger & Lachin 2016, "Randomization in Clinical
Trials", ch. 3: permuted-block randomisation). The order of a block is drawn from an HMAC of the
project's secret key, the round and the block, so it is fixed (a person asking again gets their arm)
and cannot be foreseen by people, who never see the key. Joins are numbered under the round's row
lock, so two people joining at once take two places.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction

from tasks.models import Round

from ..models import ArmAssignment


@dataclass(frozen=True)
class Arm:
    """One arm of the study: ``name``; ``model`` (``"task-slug/model-name"`` of a generative model) and
    ``prompt`` for an arm with an assistant, both empty for one without; ``max_new_tokens`` of a
    suggestion; ``share`` in its block."""

    name: str
    share: int
    model: str = ""
    prompt: str = ""
    max_new_tokens: int = 64

    @property
    def has_assistant(self) -> bool:
        return bool(self.model)


def arms_of(cfg) -> list[Arm]:
    """The task's arms (config ``assistant.arms``), in config order; [] without a study."""
    return [
        Arm(
            name=a["name"],
            share=int(a["share"]),
            model=a.get("model", ""),
            prompt=a.get("prompt", ""),
            max_new_tokens=int(a.get("max_new_tokens", 64)),
        )
        for a in cfg.assistant_arms
    ]


def block(arms: list[Arm], round_id: int, index: int) -> list[str]:
    """Block ``index`` of round ``round_id``: each arm's name ``share`` times, in an order drawn from
    the HMAC-SHA256 of the secret key, the round and the block."""
    names = [arm.name for arm in arms for _ in range(arm.share)]
    digest = hmac.new(settings.SECRET_KEY.encode(), f"arms:{round_id}:{index}".encode(), hashlib.sha256)
    random.Random(int.from_bytes(digest.digest()[:8], "big")).shuffle(names)
    return names


def arm_at(arms: list[Arm], round_id: int, position: int) -> str:
    """The arm of the person who joined ``round_id`` at ``position`` (0 first)."""
    size = sum(arm.share for arm in arms)
    return block(arms, round_id, position // size)[position % size]


def assigned_arm(round_: Round, worker, arms: list[Arm]) -> str:
    """``worker``'s arm in ``round_``: the one they were given, else a new place in the blocks.

    Raises:
        ValueError: ``arms`` is empty (the task has no study).
    """
    if not arms:
        raise ValueError("the task has no assistant arms")
    existing = ArmAssignment.objects.filter(round=round_, worker=worker).values_list("arm", flat=True).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            # The round's row lock numbers joins one after the other.
            Round.objects.select_for_update().filter(pk=round_.pk).exists()
            position = ArmAssignment.objects.filter(round=round_).count()
            arm = arm_at(arms, round_.pk, position)
            ArmAssignment.objects.create(round=round_, worker=worker, arm=arm, position=position)
            return arm
    except IntegrityError:  # the same person in two tabs at once: the first one's place stands
        return ArmAssignment.objects.get(round=round_, worker=worker).arm
