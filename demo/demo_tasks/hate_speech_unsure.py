"""The demo's hate-speech task in uncertainty mode (tasks/uncertainty.py): one open round whose target
is the hate-speech task's round-4 target (the same weights, registered for this task), and a pilot.

round  target                                   state
1      hate-speech's round-4 target (r1-2-3)    open, current: annotators write here

The pilot (``pilot``): 6 simulated annotators each send 8 statements of HatemojiBuild's test split
(real text, labelled by its gold label) through ``create_example``, so the server decides which made
the target unsure; 3 simulated validators then give the label of every unsure one they are served
(their own reading: the gold label, wrong one time in ten), which settles them by the quorum of 3.
The task page then shows the round's unsure rate, its validated rate and the histogram.
"""

from __future__ import annotations

import csv
import random

from django.conf import settings
from django.db import transaction

from annotation.models import Example
from annotation.services import ExampleError, create_example
from demo.demo_tasks.base import DemoTask, Log, pilot_account
from models_registry.models import RoundTarget
from models_registry.round_targets import set_round_targets
from models_registry.services import register_local_model
from tasks.models import Task
from tasks.services import ensure_round
from validation.services import VerdictError, next_example, submit_validation

SOURCE_TASK, SOURCE_ROUND = "hate-speech", 4
PREFIX = "pilot-unsure-"
ANNOTATORS, PER_ANNOTATOR, VALIDATORS, VALIDATOR_ERROR = 6, 8, 3, 0.1


def _no_data(log: Log) -> None:
    """Nothing of its own to import: the pilot reads HatemojiBuild in place, and the target is the
    hate-speech task's."""


def prepare_open_round(task: Task, log: Log) -> None:
    """Round 1's target: the hate-speech task's round-4 target, registered for this task (same
    directory), unless round 1 has a target already. Logs and leaves the round without one when the
    hate-speech task has not been set up (``--tasks`` without it)."""
    round_ = ensure_round(task=task, number=1)
    if RoundTarget.objects.filter(round=round_).exists():
        return
    source = (
        RoundTarget.objects.filter(round__task__slug=SOURCE_TASK, round__number=SOURCE_ROUND)
        .select_related("model")
        .first()
    )
    if source is None:
        log(f"[{task.slug}] The hate-speech task's round-{SOURCE_ROUND} target is missing: set it up first.")
        return
    model = register_local_model(
        task=task,
        name=source.model.name,
        path=source.model.path,
        card={"note": f"The {SOURCE_TASK} task's round-{SOURCE_ROUND} target, registered here as it is."},
    )
    set_round_targets(round=round_, models=[model])


def _statements(rng: random.Random, n: int) -> list[tuple[str, str]]:
    path = settings.DYNABENCH_DATA_DIR / "hatemoji_build" / "test.csv"
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = [
            (row["text"], "hateful" if row["label_gold"] == "1" else "not-hateful")
            for row in csv.DictReader(handle)
            if row["text"].strip()
        ]
    return rng.sample(rows, min(n, len(rows)))


def pilot(task: Task, log: Log, *, seed: int = 11) -> None:
    """Fill round 1 with the pilot's examples and verdicts (module docstring); idempotent: nothing is
    done once a pilot annotator has written in the round."""
    round_ = task.current_round
    if round_ is None or not RoundTarget.objects.filter(round=round_).exists():
        return
    if Example.objects.filter(round=round_, annotator__username__startswith=PREFIX).exists():
        return
    rng = random.Random(seed)
    statements = iter(_statements(rng, ANNOTATORS * PER_ANNOTATOR))
    gold: dict[int, str] = {}
    for i in range(ANNOTATORS):
        user = pilot_account(f"{PREFIX}annotator-{i + 1}")
        for _ in range(PER_ANNOTATOR):
            text, label = next(statements, (None, None))
            if text is None:
                break
            try:
                example, _ = create_example(
                    task=task, annotator=user, inputs={"statement": text}, target=label
                )
            except ExampleError as exc:  # e.g. a statement longer than the target reads
                log(f"[{task.slug}] Pilot statement refused: {exc}")
                continue
            gold[example.pk] = label
    given = 0
    validators = [pilot_account(f"{PREFIX}validator-{i + 1}") for i in range(VALIDATORS)]
    while True:
        progressed = False
        for user in validators:
            example = next_example(round_=round_, validator=user)
            if example is None:
                continue
            label = gold.get(example.pk, example.target)
            if rng.random() < VALIDATOR_ERROR:
                label = "not-hateful" if label == "hateful" else "hateful"
            try:
                with transaction.atomic():
                    submit_validation(example=example, validator=user, verdict="correct", given_target=label)
            except VerdictError as exc:
                log(f"[{task.slug}] Pilot verdict refused: {exc}")
                continue
            given += 1
            progressed = True
        if not progressed:
            break
    unsure = Example.objects.filter(round=round_, model_unsure=True).count()
    log(f"[{task.slug}] Pilot: {len(gold)} statements, {unsure} made the target unsure, {given} verdicts.")


DEMO_TASK = DemoTask(
    slug="hate-speech-unsure",
    import_data=_no_data,
    target_training_rounds={},
    open_round=1,
    prepare_open_round=prepare_open_round,
    pilot=pilot,
)
