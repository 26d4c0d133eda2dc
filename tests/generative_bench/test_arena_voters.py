"""``manage.py check_arena_voters`` (docs/benchmarking.md, "Voter integrity, per voter"): three voters who
always prefer the better of x > y > z > w, and one who always votes for w: only the last is flagged, with w
named; ``--hold`` holds them through the task's hold flow, and their votes leave the ranking."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from core.voter_integrity import GroupTest
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
    checks = selectors.voter_checks(task).per_voter
    assert checks[rigged.pk].flagged and checks[rigged.pk].pushed == models["w"].pk
    assert not any(checks[v.pk].flagged for v in honest)
    out = io.StringIO()
    call_command("check_arena_voters", "--task", task.slug, stdout=out)
    text = out.getvalue()
    assert (
        "4 voters, 4 with at least 10 decisive votes tested, 1 flagged" in text
        and "favouring w  FLAGGED" in text
    )
    assert f"voter {rigged.username}: 12 decisive votes" in text
    assert "Groups flagged: 0" in text  # one rigged account is not a group
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


def test_a_flagged_group_is_held_with_its_reason(arena):
    """The hold follows ``VoterChecks``: members of a flagged group are held with the group's reason, a
    voter flagged by both tests with both reasons; an unflagged group holds nobody."""
    task, models, honest, rigged = arena
    flagged = GroupTest(models["w"].pk, (honest[0].pk, rigged.pk), 2, 0.4, 0.6, 1.45, 1.2, True)
    quiet = GroupTest(models["x"].pk, (honest[1].pk,), 1, 0.5, 0.7, 0.4, 1.2, False)
    per_voter = selectors.voter_checks(task).per_voter
    checks = selectors.VoterChecks(per_voter, {models["w"].pk: flagged, models["x"].pk: quiet})
    held = services.hold_flagged_voters(task=task, checks=checks, names={models["w"].pk: "w"})
    assert sorted(held) == sorted([honest[0].pk, rigged.pk])
    reason = TaskWorker.objects.get(task=task, user=honest[0]).held_reason
    assert (
        reason
        == "One of 2 voters who chose w far more often than the ranking predicts (0.4 expected by chance; group test)"
    )
    both = TaskWorker.objects.get(task=task, user=rigged).held_reason
    assert both.startswith("Arena votes inconsistent with the ranking: z = -") and "; One of 2 voters" in both
    assert not TaskWorker.objects.filter(task=task, user=honest[1], held_at__isnull=False).exists()


def test_the_task_owner_sees_the_flagged_voters_and_holds_them_from_the_ranking_page(arena, client):
    task, models, honest, rigged = arena
    ranking = f"/tasks/{task.slug}/arena/ranking/"
    api = f"/api/tasks/{task.slug}/arena/ranking/"
    hold = f"/tasks/{task.slug}/arena/ranking/hold-voters/"
    # Anyone else: no section, null in the API, and the hold is a 404.
    client.force_login(honest[0])
    assert "Voter checks" not in client.get(ranking).content.decode()
    assert client.get(api).json()["voter_checks"] is None
    assert client.post(hold).status_code == 404
    owner = UserFactory()
    task.owners.add(owner)
    client.force_login(owner)
    page = client.get(ranking).content.decode()
    assert "Voter checks" in page and "Flagged voters (1)" in page and rigged.username in page
    assert "favouring w" in page and "Hold the 1 flagged voter for review" in page
    checks = client.get(api).json()["voter_checks"]
    assert (checks["voters"], checks["tested"], checks["held"]) == (4, 4, 0)
    assert [row["user_id"] for row in checks["flagged"]] == [rigged.pk]
    assert not any(group["flagged"] for group in checks["groups"])
    after = client.post(hold, follow=True).content.decode()
    assert "Held for review: 1 voter;" in after and "1 held for review now" in after
    assert TaskWorker.objects.get(task=task, user=rigged).held_at is not None
    assert client.get(api).json()["n_votes"] == 36  # the 12 held votes leave the ranking
