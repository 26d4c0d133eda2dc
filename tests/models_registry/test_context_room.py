"""Contexts that leave the target no room for the input are not served (models_registry.context_room).

The tiny NLI classifier reads premise and hypothesis together, at most 128 word pieces; each letter
"a" followed by a space is one word piece. A premise of N words with an empty hypothesis makes
[CLS] + N + [SEP] = N + 2 word pieces (the tokenizer adds no second [SEP] for an empty text), so it leaves
128 - (N + 2) = 126 - N for the hypothesis: N = 102 leaves 24 (served, the minimum room), N = 103 leaves 23
(left out).
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse

from models_registry.context_room import MIN_INPUT_ROOM, check_context_room
from tasks.models import Context
from tasks.selectors import NO_ROOM, contexts_without_room, next_context
from tests.factories.models_registry import registered_target
from tests.factories.tasks import ContextFactory, open_round
from tests.helpers.tiny_models import build_tiny_classifier

NLI_LABELS = ("entailment", "neutral", "contradiction")


def premise(words: int) -> str:
    return " ".join(["a"] * words)


@pytest.fixture
def nli_round(nli_task):
    return open_round(nli_task)


@pytest.fixture
def contexts(nli_round):
    """Premises leaving 125, 24 and 23 word pieces for the hypothesis."""
    return {
        "short": ContextFactory(round=nli_round, data={"premise": premise(1)}, external_id="short"),
        "fits": ContextFactory(round=nli_round, data={"premise": premise(102)}, external_id="fits"),
        "long": ContextFactory(round=nli_round, data={"premise": premise(103)}, external_id="long"),
    }


@pytest.fixture
def nli_target(nli_task, nli_round, tmp_path, contexts, django_capture_on_commit_callbacks):
    from engine.runtime.classifier import clear_cache

    path = build_tiny_classifier(tmp_path / "tiny-nli", labels=NLI_LABELS)
    with django_capture_on_commit_callbacks(execute=True):  # the check queued once the targets commit
        model = registered_target(
            task=nli_task, round_=nli_round, name="tiny-nli", path=path, description="t"
        )
    yield model
    clear_cache()


def test_setting_the_targets_marks_the_context_without_room(contexts, nli_target):
    """set_round_targets queues the check (inline in tests): only the 103-word premise is marked."""
    marked = {c.external_id: c.metadata.get(NO_ROOM) for c in Context.objects.all()}
    assert marked["short"] is None
    assert marked["fits"] is None
    assert marked["long"] == {"model": "tiny-nli", "tokens": 105, "limit": 128, "min_room": MIN_INPUT_ROOM}


def test_a_context_without_room_is_never_served(nli_round, contexts, nli_target):
    served = {next_context(round_=nli_round, strategy="uniform").external_id for _ in range(40)}
    assert served == {"short", "fits"}
    # "Skip" from the only servable... left with the marked one: still not served.
    Context.objects.filter(external_id="short").delete()
    assert next_context(round_=nli_round, exclude=contexts["fits"].pk).external_id == "fits"


def test_the_report_counts_and_a_smaller_room_unmarks(nli_round, contexts, nli_target):
    report = check_context_room(nli_round)
    assert (report.checked, report.left_out, report.limits) == (3, 1, {"tiny-nli": 128})
    assert str(report) == (
        "1 of 3 contexts left out: they leave the target fewer than 24 word pieces for the input "
        "(tiny-nli reads 128)"
    )
    assert contexts_without_room(nli_round) == 1
    # With room for 23 the long premise is servable again; with room for 25, the 102-word one is not.
    assert check_context_room(nli_round, min_room=23).left_out == 0
    assert contexts_without_room(nli_round) == 0
    assert check_context_room(nli_round, min_room=25).left_out == 2


def test_no_local_target_checks_nothing_and_unmarks(nli_round, contexts, nli_target):
    from models_registry.models import RoundTarget

    RoundTarget.objects.filter(round=nli_round).delete()
    report = check_context_room(nli_round)
    assert (report.checked, report.left_out) == (0, 0)
    assert contexts_without_room(nli_round) == 0


def test_a_task_whose_model_reads_no_context_checks_nothing(hate_round):
    ContextFactory(round=hate_round, data={}, external_id="x")
    assert check_context_room(hate_round).checked == 0


def test_negative_room_is_refused(nli_round):
    with pytest.raises(ValueError, match="at least 0"):
        check_context_room(nli_round, min_room=-1)


def test_the_command_and_the_round_page_say_how_many(
    client, nli_task, nli_round, contexts, nli_target, capsys
):
    call_command("check_context_room", "nli")
    assert "nli round 1: 1 of 3 contexts left out" in capsys.readouterr().out
    page = client.get(reverse("cycle:round", args=["nli", nli_round.number]))
    assert "1 of its 3 contexts is not served" in page.content.decode()
