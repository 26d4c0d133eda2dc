"""``manage.py check_arena_voters`` (docs/benchmarking.md, "Voter integrity, per voter"): three voters who
always prefer the better of x > y > z > w, and one who always votes for w: only the last is flagged, with w
named; ``--hold`` holds them through the task's hold flow, and their votes leave the ranking."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from generative_bench.arena import selectors, services
from models_registry.models import RegisteredModel
from tasks.models import TaskWorker
from tests.factories.accounts import UserFactory
from tests.factories.arena import add_model, stored_battle
from tests.factories.red_team import make_red_team_round

ORDER = ("x", "y", "z", "w")


@pytest.fixture
def arena(db, tmp_path):
    round_ = make_red_team_round(tmp_path, slug="red-team")
    task = round_.task
    RegisteredModel.objects.filter(task=task).update(status="failed")  # the round's target stays out
    models = {name: add_model(task, name) for name in ORDER}
    honest = [UserFactory() for _ in range(3)]
    rigged = UserFactory()
    pairs = [(a, b) for i, a in enumerate(ORDER) for b in ORDER[i + 1 :]]  # 6 pairs, the better first
    for voter in honest:
        for a, b in pairs * 2:  # 12 votes, each for the better model, shown in both orders
            battle = stored_battle(task, voter, models[b], models[a])
            services.vote(battle=battle, voter=voter, vote="b")
    for other in ("x", "y", "z") * 4:  # 12 votes, always for w
        battle = stored_battle(task, rigged, models[other], models["w"])
        services.vote(battle=battle, voter=rigged, vote="b")
    return task, models, honest, rigged


def test_only_the_voter_pushing_one_model_is_flagged_and_held_on_request(arena):
    task, models, honest, rigged = arena
    checks = selectors.voter_checks(task)
    assert checks[rigged.pk].flagged and checks[rigged.pk].pushed == models["w"].pk
    assert not any(checks[v.pk].flagged for v in honest)
    out = io.StringIO()
    call_command("check_arena_voters", "--task", task.slug, stdout=out)
    text = out.getvalue()
    assert "4 voters tested, 1 flagged" in text and "favouring w  FLAGGED" in text
    assert not TaskWorker.objects.filter(task=task, held_at__isnull=False).exists()  # no --hold: nothing held
    before = selectors.arena_summary(task).ranking.n_votes
    call_command("check_arena_voters", "--task", task.slug, "--hold", stdout=io.StringIO())
    worker = TaskWorker.objects.get(task=task, user=rigged)
    assert (
        worker.held_at is not None and "favouring w" in worker.held_reason and "z = -" in worker.held_reason
    )
    summary = selectors.arena_summary(task)
    assert (before, summary.ranking.n_votes, summary.left_out["held"]) == (48, 36, 12)


def test_a_task_without_an_arena_is_refused(hate_task):
    with pytest.raises(CommandError, match="red-teaming"):
        call_command("check_arena_voters", "--task", hate_task.slug, stdout=io.StringIO())
    with pytest.raises(CommandError, match="No red-teaming task"):
        call_command("check_arena_voters", "--task", "nope", stdout=io.StringIO())
