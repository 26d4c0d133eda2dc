"""Saved weight sets (forks) and frozen snapshots: task owners only, shared URLs, immutability."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from leaderboards.models import LeaderboardFork, LeaderboardSnapshot


def order(response) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-model="(\d+)"', response.content.decode())]


@pytest.fixture
def board(hate_task, hate_round, make_dataset, make_model, score, annotator):
    d = make_dataset("r1", round_=hate_round)
    p, q, r = make_model("P"), make_model("Q"), make_model("R")
    score(p, d, 0.9, throughput=100)
    score(q, d, 0.6, throughput=400)
    score(r, d, 0.3, throughput=250)
    hidden = make_model("Secret", owner=annotator, published=False)
    score(hidden, d, 0.99, throughput=1000)
    return {"d": d, "P": p, "Q": q, "R": r, "hidden": hidden, "task": hate_task}


def throughput_only(board):
    return {
        "w_perf": "0",
        "w_throughput": "1",
        "w_memory": "0",
        "w_fairness": "0",
        "w_robustness": "0",
        f"d_{board['d'].pk}": "2",
    }


def test_owner_saves_a_fork_and_anyone_opens_it(client, board, owner):
    client.force_login(owner)
    url = reverse("leaderboards:fork_create", args=[board["task"].slug])
    response = client.post(url, {"name": "Speed matters", **throughput_only(board)})
    fork = LeaderboardFork.objects.get(task=board["task"])
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboards:fork", args=[board["task"].slug, "speed-matters"])
    assert fork.metric_weights["throughput"] == 1 and fork.metric_weights["perf"] == 0
    assert fork.dataset_weights == {str(board["d"].pk): 2.0}
    assert fork.created_by == owner

    client.logout()
    response = client.get(response["Location"])
    assert response.status_code == 200
    assert "Speed matters" in response.content.decode()
    assert order(response) == [board["Q"].pk, board["R"].pk, board["P"].pk]
    # Listed on the leaderboard page.
    page = client.get(reverse("leaderboards:leaderboard", args=[board["task"].slug])).content.decode()
    assert "/leaderboard/forks/speed-matters/" in page
    # Saving the same name again with "replace" ticked replaces the weights (test_tester_defects: unticked).
    client.force_login(owner)
    client.post(url, {"name": "Speed matters", "w_perf": "1", "replace": "1"})
    assert LeaderboardFork.objects.count() == 1
    assert LeaderboardFork.objects.get().metric_weights["perf"] == 1


def test_fork_needs_a_name_and_an_owner(client, board, owner, outsider):
    url = reverse("leaderboards:fork_create", args=[board["task"].slug])
    assert client.post(url, {"name": "x"}).status_code == 404  # not logged in
    client.force_login(outsider)
    assert client.post(url, {"name": "x"}).status_code == 404
    assert client.get(url).status_code == 405
    client.force_login(owner)
    response = client.post(url, {"name": "   "}, follow=True)
    assert "needs a name" in response.content.decode()
    assert not LeaderboardFork.objects.exists()
    assert client.get(reverse("leaderboards:fork", args=[board["task"].slug, "nope"])).status_code == 404


def test_snapshot_is_frozen_public_and_immutable(client, board, owner, score, make_dataset):
    client.force_login(owner)
    # The owner sees the unpublished model live...
    assert board["hidden"].pk in order(
        client.get(reverse("leaderboards:leaderboard", args=[board["task"].slug]))
    )
    response = client.post(
        reverse("leaderboards:snapshot_create", args=[board["task"].slug]),
        {"name": "Round 1 final", **throughput_only(board)},
    )
    snapshot = LeaderboardSnapshot.objects.get()
    assert response["Location"] == reverse("leaderboards:snapshot", args=[board["task"].slug, snapshot.pk])
    client.logout()
    page = client.get(response["Location"])
    assert page.status_code == 200
    # ...but a snapshot is what the public sees: no unpublished model.
    assert order(page) == [board["Q"].pk, board["R"].pk, board["P"].pk]
    assert "Secret" not in page.content.decode()
    assert "Round 1 final" in page.content.decode()

    # New scores later do not change it.
    hc = make_dataset("hc")
    score(board["P"], hc, 1.0, throughput=5000)
    again = client.get(response["Location"])
    assert order(again) == order(page)
    assert "HC (perf)" not in again.content.decode()

    snapshot.name = "changed"
    with pytest.raises(ValueError, match="immutable"):
        snapshot.save()


def test_snapshot_owners_only_and_404s(client, board, outsider):
    client.force_login(outsider)
    url = reverse("leaderboards:snapshot_create", args=[board["task"].slug])
    assert client.post(url, {"name": "mine"}).status_code == 404
    assert not LeaderboardSnapshot.objects.exists()
    assert client.get(reverse("leaderboards:snapshot", args=[board["task"].slug, 999])).status_code == 404


def test_owner_forms_shown_to_owners_only(client, board, owner, outsider):
    url = reverse("leaderboards:leaderboard", args=[board["task"].slug])
    client.force_login(outsider)
    assert "Freeze snapshot" not in client.get(url).content.decode()
    client.force_login(owner)
    html = client.get(url, {"w_perf": "2"}).content.decode()
    assert "Freeze snapshot" in html and "Save weight set" in html
    assert '<input type="hidden" name="w_perf" value="2">' in html
