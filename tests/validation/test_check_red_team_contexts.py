"""``manage.py check_red_team_contexts``: the red-teaming rows stored without the passage their task needs
(before ``start_conversation`` refused it) are listed; ``--flag`` abandons the open conversations and
flags the examples by owner verdicts, so validators are no longer served them and no verified failure
counts them; rows with their passage, and tasks whose passage is optional, are left alone."""

from __future__ import annotations

import copy
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Conversation, Example
from models_registry.models import RegisteredModel
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Task
from tasks.red_team_stats import red_team_stats
from tasks.services import ensure_round, set_current_round
from tests.factories.accounts import UserFactory
from validation.management.commands.check_red_team_contexts import REASON
from validation.models import Validation

pytestmark = pytest.mark.django_db

MESSAGES = [{"role": "user", "content": "How long?"}, {"role": "assistant", "content": "9,000 km."}]


def _round(slug, *, passage_optional=False):
    config = copy.deepcopy(RED_TEAM_CONFIG)
    config["context_fields"][1]["optional"] = passage_optional
    task = Task.objects.create(slug=slug, name=slug, config=config)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    model = RegisteredModel.objects.create(task=task, name=f"{slug}-model", path="unused", status="ready")
    return round_, model


def _judged(round_, model, author, *, context=None, status="pending", retracted=False):
    """A judged conversation (a claimed failure) and its example, as ``submit_conversation`` stored them."""
    example = Example.objects.create(
        round=round_,
        context=context,
        annotator=author,
        inputs={"messages": MESSAGES},
        target={"supported": "no", "helpful": "2"},
        model_wrong=True,
        tags=["fabrication"],
        status=status,
        is_retracted=retracted,
        metadata={"mode": "conversation", "turns": 1, "cost": None},
    )
    conversation = Conversation.objects.create(
        round=round_, annotator=author, model=model, context=context, status="submitted", example=example
    )
    example.metadata["conversation"] = conversation.pk
    example.save(update_fields=["metadata"])
    return conversation, example


@pytest.fixture
def rows(annotator):
    """In the task "red-team" (passage required): an open conversation without a passage, three judged
    ones without (pending, verified, retracted) and one with its passage; in "open-prompt" (passage
    optional) a judged conversation without one."""
    round_, model = _round("red-team")
    passage = Context.objects.create(task=round_.task, round=round_, data={"passage": "The Amazon is long."})
    open_ = Conversation.objects.create(round=round_, annotator=annotator, model=model)
    _, pending = _judged(round_, model, annotator)
    _, verified = _judged(round_, model, annotator, status="validated_correct")
    _, retracted = _judged(round_, model, annotator, retracted=True)
    _, kept = _judged(round_, model, annotator, context=passage)
    other_round, other_model = _round("open-prompt", passage_optional=True)
    _, optional = _judged(other_round, other_model, annotator)
    owner = UserFactory(username="taskowner")
    round_.task.owners.add(owner)
    return {
        "round": round_,
        "open": open_,
        "pending": pending,
        "verified": verified,
        "retracted": retracted,
        "kept": kept,
        "optional": optional,
        "owner": owner,
    }


def _stats(round_):
    return red_team_stats(round_.task)[round_.pk]


def _run(*args):
    out = StringIO()
    call_command("check_red_team_contexts", *args, stdout=out)
    return out.getvalue().splitlines()


def test_the_check_lists_the_rows_without_a_passage_and_changes_nothing(rows):
    lines = _run()
    p, v, r = rows["pending"], rows["verified"], rows["retracted"]
    assert lines == [
        f"red-team round 1: conversation {rows['open'].pk} by annotator (open, 0 turn(s))",
        f"red-team round 1: conversation {p.metadata['conversation']} by annotator (submitted, 0 turn(s), "
        f"example {p.pk})",
        f"red-team round 1: conversation {v.metadata['conversation']} by annotator (submitted, 0 turn(s), "
        f"example {v.pk})",
        f"red-team round 1: conversation {r.metadata['conversation']} by annotator (submitted, 0 turn(s), "
        f"example {r.pk})",
        f"red-team round 1: example {p.pk} by annotator (conversation, pending, a claimed failure)",
        f"red-team round 1: example {v.pk} by annotator (conversation, validated_correct, a claimed failure)",
        f"red-team round 1: example {r.pk} by annotator (conversation, retracted, a claimed failure)",
        "4 conversation(s) and 3 example(s) stored without the context their task needs.",
        "Nothing changed. Run with --flag --actor <owner> to abandon the open conversations and flag the "
        "examples (docs/operations.md).",
    ]
    rows["open"].refresh_from_db()
    assert rows["open"].status == "open"
    assert list(Example.objects.order_by("pk").values_list("status", flat=True)) == [
        "pending",
        "validated_correct",
        "pending",
        "pending",
        "pending",
    ]
    assert not Validation.objects.exists()


def test_flag_takes_them_out_of_validation_and_the_verified_failures(rows):
    # Before: 3 attempts in the round (pending, verified, kept; the retracted one is none), 1 verified.
    before = _stats(rows["round"])
    assert (before.attempts, before.verified) == (3, 1)
    lines = _run("--flag", "--actor", "taskowner")
    p, v, r = rows["pending"], rows["verified"], rows["retracted"]
    assert (
        lines[0]
        == f"red-team round 1: conversation {rows['open'].pk} by annotator (open, 0 turn(s)): abandoned"
    )
    assert lines[4:7] == [
        f"red-team round 1: example {p.pk} by annotator (conversation, pending, a claimed failure): flagged",
        f"red-team round 1: example {v.pk} by annotator (conversation, validated_correct, a claimed failure): "
        "overturned from validated_correct to flagged",
        f"red-team round 1: example {r.pk} by annotator (conversation, retracted, a claimed failure): left as "
        "it is (retracted by its author)",
    ]
    for key, status in [
        ("pending", "flagged"),
        ("verified", "flagged"),
        ("retracted", "pending"),
        ("kept", "pending"),
    ]:
        rows[key].refresh_from_db()
        assert rows[key].status == status, key
    rows["open"].refresh_from_db()
    assert rows["open"].status == "abandoned"
    verdicts = Validation.objects.order_by("example_id")
    assert [(v.example_id, v.verdict, v.is_owner_verdict, v.reason) for v in verdicts] == [
        (p.pk, "flagged", True, REASON),
        (v.pk, "flagged", True, REASON),
    ]
    after = _stats(rows["round"])
    # The verdict given without the passage no longer counts; a flagged example stays an attempt, as a
    # flagged example stays in the MER's denominator (docs/domain.md).
    assert (after.attempts, after.verified) == (3, 0)
    rows["optional"].refresh_from_db()
    assert rows["optional"].status == "pending"  # its task takes conversations without a passage
    # A second run finds the same rows and changes nothing more.
    again = _run("--flag", "--actor", "taskowner")
    assert again[4:6] == [
        f"red-team round 1: example {p.pk} by annotator (conversation, flagged, a claimed failure): left as "
        "it is (already flagged)",
        f"red-team round 1: example {v.pk} by annotator (conversation, flagged, a claimed failure): left as "
        "it is (already flagged)",
    ]
    assert Validation.objects.count() == 2


def test_flag_needs_an_owner(rows, validator):
    with pytest.raises(CommandError, match="name the owner with --actor"):
        _run("--flag")
    lines = _run("--flag", "--actor", validator.username)
    assert lines[4].endswith(": not flagged: Only the task's owners can settle an example in owner mode.")
    rows["pending"].refresh_from_db()
    assert rows["pending"].status == "pending"


def test_one_task_only(rows):
    assert _run("--task", "open-prompt") == [
        "0 conversation(s) and 0 example(s) stored without the context their task needs."
    ]
    with pytest.raises(CommandError, match="There is no task 'nope'"):
        _run("--task", "nope")
