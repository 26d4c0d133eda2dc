"""What every demo task shares: its description (``DemoTask``) and laying out its rounds and targets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cycle.training.targets import train_target_for_rounds
from models_registry.context_room import check_context_room
from models_registry.models import RegisteredModel, RoundTarget
from models_registry.round_targets import set_round_targets
from tasks.models import Context, Task
from tasks.services import close_round, ensure_builtin_task, ensure_round, set_current_round

Log = Callable[[str], None]


@dataclass(frozen=True)
class DemoTask:
    """One task of the demo.

    Attributes:
        slug: a key of ``tasks.services.BUILTIN_TASKS``.
        import_data: imports the task's real data (rounds, examples, contexts, static datasets);
            idempotent; raises ``CommandError`` when the data folder is missing.
        target_training_rounds: target round -> the rounds whose training split trains its target
            (round 1's target is trained on round 1's own training split, marked so in its card).
        open_round: the round left open (current) for annotators; every lower round is closed.
        prepare_open_round: optional; called with the task after the open round exists (e.g. to load
            its contexts). Idempotent.
        card_note: optional; written as the ``note`` of the model card of each target trained here
            (shown on the model page), e.g. where the training data came from.
        pilot: optional; called with the task once it is laid out and evaluated, when the set-up is
            asked for pilots (``setup_demo(pilot=True)``, the command's default): simulated people fill
            the open round so that its figures show (``red_team_pilot``). Idempotent.
    """

    slug: str
    import_data: Callable[[Log], None]
    target_training_rounds: dict[int, tuple[int, ...]]
    open_round: int
    prepare_open_round: Callable[[Task, Log], None] | None = None
    card_note: str = ""
    pilot: Callable[[Task, Log], None] | None = None


@dataclass
class TaskReport:
    """What the demo did for one task: each round's target names, models trained and reused."""

    models: dict[int, str] = field(default_factory=dict)
    trained: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)


def model_name(training_rounds: tuple[int, ...], recipe: str) -> str:
    """The demo's name for a target: ``minilm-quick-r1-2`` is the quick recipe on rounds 1 and 2."""
    return f"minilm-{recipe}-r" + "-".join(str(r) for r in training_rounds)


def _target_model(
    task: Task,
    training_rounds: tuple[int, ...],
    recipe: str,
    *,
    target_round: int,
    report: TaskReport,
    log: Log,
    card_note: str = "",
) -> RegisteredModel:
    """The demo's model trained on ``training_rounds``: reused when ready on disk, else (re)trained."""
    name = model_name(training_rounds, recipe)
    existing = RegisteredModel.objects.filter(task=task, name=name).first()
    if existing and existing.status == RegisteredModel.Status.READY and Path(existing.path).is_dir():
        report.reused.append(name)
        return existing
    log(f"[{task.slug}] Training {name} on rounds {list(training_rounds)} ({recipe} recipe)...")
    model = train_target_for_rounds(
        task=task,
        rounds=list(training_rounds),
        recipe=recipe,
        name=name,
        target_round=target_round,
        progress=log,
        # Only this demo model's own name is replaced: its row exists but its weights are gone.
        replace=True,
    )
    report.trained.append(name)
    if card_note:
        model.card = {**(model.card or {}), "note": card_note}
        model.save(update_fields=["card"])
    if model.status == RegisteredModel.Status.READY and not model.is_published:
        # The demo's own targets are on its leaderboards for everyone (new registrations start
        # unpublished; a name that failed once keeps the flag it had).
        model.is_published = True
        model.save(update_fields=["is_published"])
    return model


def lay_out_task(spec: DemoTask, *, recipe: str, log: Log) -> tuple[Task, TaskReport]:
    """Import the task's data, train its round targets, close the early rounds and open ``open_round``.

    The round lifecycle is laid out once (while the task has no current round). After that it is the
    owner's: they may close the open round, start the next or change targets in the admin, and a
    later run leaves that as it is (it only retrains targets whose weights are gone).
    """
    report = TaskReport()
    spec.import_data(log)
    task = ensure_builtin_task(spec.slug)
    first_run = task.current_round_id is None
    trained: dict[tuple[int, ...], RegisteredModel] = {}
    for round_number, training_rounds in spec.target_training_rounds.items():
        round_ = ensure_round(task=task, number=round_number)
        if training_rounds not in trained:
            trained[training_rounds] = _target_model(
                task,
                training_rounds,
                recipe,
                target_round=round_number,
                report=report,
                log=log,
                card_note=spec.card_note,
            )
        model = trained[training_rounds]
        if not RoundTarget.objects.filter(round=round_).exists():
            set_round_targets(round=round_, models=[model])
        report.models[round_number] = ", ".join(
            RoundTarget.objects.filter(round=round_).values_list("model__name", flat=True)
        )
        if first_run and round_number < spec.open_round:
            close_round(round_=round_)
    open_round = ensure_round(task=task, number=spec.open_round)
    if spec.prepare_open_round is not None:
        spec.prepare_open_round(task, log)
    room = check_context_room(open_round)
    if room.left_out:
        log(f"[{task.slug}] Round {spec.open_round}: {room}")
    if first_run:
        set_current_round(task=task, round_=open_round)
    return task, report


def copy_contexts(task: Task, *, from_round: int, to_round: int, log: Log, tag: str = "") -> int:
    """Give round ``to_round`` the contexts of round ``from_round`` (same data, tag and external id).

    Idempotent: contexts whose external id the target round already has are not added again (the
    round's unique ``(round, external_id)`` constraint). Returns the number added.
    """

    source = ensure_round(task=task, number=from_round)
    target = ensure_round(task=task, number=to_round)
    have = set(Context.objects.filter(round=target).values_list("external_id", flat=True))
    new = [
        Context(
            task=task,
            round=target,
            data=c.data,
            tag=tag or c.tag,
            metadata=c.metadata,
            external_id=c.external_id,
        )
        for c in Context.objects.filter(round=source).exclude(external_id="").order_by("id")
        if c.external_id not in have
    ]
    Context.objects.bulk_create(new, ignore_conflicts=True)
    if new:
        log(f"[{task.slug}] Round {to_round}: {len(new)} contexts from round {from_round}")
    return len(new)


def pilot_account(username: str):
    """The account of a simulated pilot person ``username`` (made once, with no usable password: nobody
    signs in as them)."""
    from django.contrib.auth import get_user_model

    user, created = get_user_model().objects.get_or_create(
        username=username, defaults={"email": f"{username}@example.org"}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user
