"""Asking for a replay (``generative_bench.replay.services``): what is refused, with which code; a second
request of a running one is refused, of a finished, cancelled or cut-off one resumes the same row; the
job is queued only once the request commits. No model runs here."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from generative_bench.models import Replay, ReplayAnswer
from generative_bench.replay import selectors
from generative_bench.replay.services import ReplayError, cancel_replay, request_replay
from models_registry.models import RegisteredModel
from tests.factories.red_team import make_passage, make_red_team_round
from tests.generative_bench.replay_world import ONE_TURN, conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    """The jobs queued (their arguments), instead of running them."""
    calls = []
    monkeypatch.setattr(
        "generative_bench.replay.services.enqueue", lambda func, *args, task_name: calls.append((func, args))
    )
    return calls


@pytest.fixture
def round_(smollm2_dir):
    return make_red_team_round(smollm2_dir)


def _refusal(**kwargs) -> str:
    with pytest.raises(ReplayError) as refused:
        request_replay(**kwargs)
    return refused.value.code


def test_what_cannot_be_replayed_is_refused_with_its_code(round_, hate_round, smollm2_dir, owner, queued):
    target = round_.targets.get().model
    classifier = RegisteredModel.objects.create(task=hate_round.task, name="clf", status="ready")
    other = make_red_team_round(smollm2_dir, slug="other-red-team").targets.get().model
    failing = RegisteredModel.objects.create(
        task=round_.task, name="broken", path="/nowhere", status="failed"
    )
    assert _refusal(round_=hate_round, model=classifier) == "not_red_team"
    assert _refusal(round_=round_, model=other) == "other_task"
    assert _refusal(round_=round_, model=failing) == "not_ready"
    assert _refusal(round_=round_, model=target, target_turns="both") == "invalid"
    assert not Replay.objects.exists() and queued == []


def test_the_job_is_queued_once_the_request_commits(
    round_, owner, django_capture_on_commit_callbacks, queued
):
    target = round_.targets.get().model
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        replay = request_replay(round_=round_, model=target, target_turns="regenerate", user=owner)
        assert queued == []
    assert len(callbacks) == 1
    callbacks[0]()
    assert queued == [("generative_bench.jobs.run_replay_job", (replay.pk,))]
    assert (replay.status, replay.target_turns, replay.requested_by) == ("queued", "regenerate", owner)


def test_a_replay_asked_again_is_refused_while_it_runs_and_resumed_after(round_, owner, validator, queued):
    target = round_.targets.get().model
    replay = request_replay(round_=round_, model=target, user=owner)
    assert _refusal(round_=round_, model=target, user=owner) == "already_running"
    Replay.objects.filter(pk=replay.pk).update(status="running", started_at=timezone.now())
    assert _refusal(round_=round_, model=target, user=owner) == "already_running"
    for finished in ("done", "failed", "cancelled"):
        Replay.objects.filter(pk=replay.pk).update(status=finished, error="x", finished_at=timezone.now())
        again = request_replay(round_=round_, model=target, user=validator)
        assert again.pk == replay.pk
        again.refresh_from_db()
        assert (again.status, again.error, again.finished_at, again.requested_by) == (
            "queued",
            "",
            None,
            validator,
        )
    assert Replay.objects.count() == 1
    # keep and regenerate are two replays of the same round and model
    assert request_replay(round_=round_, model=target, target_turns="regenerate").pk != replay.pk


def test_a_replay_left_running_by_a_killed_worker_is_resumed(round_, owner, queued, settings):
    """Stale: nothing happened for longer than the job cluster lets a job run (its last answer's write or
    its run's start); a running replay that answered lately is still running."""
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 600}
    target = round_.targets.get().model
    replay = request_replay(round_=round_, model=target, user=owner)
    long_ago = timezone.now() - timedelta(seconds=601)
    Replay.objects.filter(pk=replay.pk).update(status="running", started_at=long_ago)
    example = conversation(round_, make_passage(round_), ONE_TURN)
    answer = ReplayAnswer.objects.create(replay=replay, example=example, answer="a")
    assert selectors.is_stale(Replay.objects.get(pk=replay.pk)) is False  # the answer was written just now
    assert _refusal(round_=round_, model=target) == "already_running"
    ReplayAnswer.objects.filter(pk=answer.pk).update(updated_at=long_ago)
    assert selectors.is_stale(Replay.objects.get(pk=replay.pk)) is True
    assert request_replay(round_=round_, model=target).pk == replay.pk
    assert Replay.objects.get(pk=replay.pk).status == "queued"


def test_cancel_stops_a_queued_or_running_replay_only(round_, owner, queued):
    replay = request_replay(round_=round_, model=round_.targets.get().model, user=owner)
    assert cancel_replay(replay=replay) is True
    replay.refresh_from_db()
    assert replay.status == "cancelled" and replay.finished_at is not None
    assert cancel_replay(replay=replay) is False
