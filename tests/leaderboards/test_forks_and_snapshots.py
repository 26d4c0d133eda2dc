"""Saved weight sets (forks) and frozen snapshots: task owners only, shared URLs, immutability; each fork
its own slug whatever the script of its name, a question before one replaces a fork of the same name, bad
weights refused and given back to correct, odd digits in a post refused with a message."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

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


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


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
    # Saving the same name again with "replace" ticked replaces the weights (unticked, it asks first:
    # test_saving_an_existing_name_asks_before_replacing).
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


def test_forks_named_without_ascii_letters_get_their_own_slugs(client, board, owner):
    client.force_login(owner)
    url = reverse("leaderboards:fork_create", args=[board["task"].slug])
    weights = {"😀": "1", "🔥": "2", "أوزان": "3", "Speed": "4", "speed": "5"}
    locations = {}
    for name, w in weights.items():
        response = client.post(url, {"name": name, "w_throughput": w})
        assert response.status_code == 302
        locations[name] = response["Location"]
    forks = {f.name: f for f in LeaderboardFork.objects.all()}
    assert set(forks) == set(weights)  # none overwritten
    assert {n: f.slug for n, f in forks.items()} == {
        "😀": "fork",
        "🔥": "fork-2",
        "أوزان": "fork-3",
        "Speed": "speed",
        "speed": "speed-2",
    }
    for name, w in weights.items():
        assert forks[name].metric_weights["throughput"] == float(w)
        response = client.get(locations[name])
        assert response.status_code == 200 and response.context["fork"].name == name


def test_saving_an_existing_name_asks_before_replacing(client, board, owner):
    client.force_login(owner)
    url = reverse("leaderboards:fork_create", args=[board["task"].slug])
    client.post(url, {"name": "Speed matters", "w_throughput": "2"})
    response = client.post(url, {"name": "Speed matters", "w_throughput": "7"}, follow=True)
    assert "exists already" in " ".join(messages_of(response))
    assert LeaderboardFork.objects.get().metric_weights["throughput"] == 2.0  # kept
    # The form on the page offers the choice.
    assert 'name="replace"' in response.content.decode()
    response = client.post(url, {"name": "Speed matters", "w_throughput": "7", "replace": "1"})
    fork = LeaderboardFork.objects.get()
    assert response["Location"] == reverse("leaderboards:fork", args=[board["task"].slug, "speed-matters"])
    assert fork.metric_weights["throughput"] == 7.0


@pytest.mark.parametrize(
    "bad, reason",
    [
        ({"w_perf": "-5"}, "must be a number from 0"),
        ({"w_memory": "nan"}, "must be a number from 0"),
        ({"w_memory": "abc"}, "is not a number"),
        ({"w_bogus": "1"}, "Unknown metric"),
        (
            {"w_perf": "0", "w_throughput": "0", "w_memory": "0", "w_fairness": "0", "w_robustness": "0"},
            "All metric weights are zero",
        ),
    ],
)
def test_fork_with_bad_weights_is_refused_and_the_weights_shown_again(client, board, owner, bad, reason):
    client.force_login(owner)
    url = reverse("leaderboards:fork_create", args=[board["task"].slug])
    posted = {"w_throughput": "3", **bad}
    response = client.post(url, {"name": "Bad", **posted})
    assert response.status_code == 302
    assert not LeaderboardFork.objects.exists()
    assert parse_qs(urlsplit(response["Location"]).query) == {k: [v] for k, v in posted.items()}  # to correct
    page = client.get(response["Location"])
    text = " ".join(messages_of(page))
    assert "The weight set was not saved." in text and reason in text
    assert "the default is used" not in text


@pytest.mark.parametrize("field", ["round", "d_²", "d_١"])
def test_fork_and_snapshot_posts_with_odd_digits_are_refused_with_a_message(client, board, owner, field):
    client.force_login(owner)
    value = "²" if field == "round" else "1"
    for name, model in (("fork_create", LeaderboardFork), ("snapshot_create", LeaderboardSnapshot)):
        url = reverse(f"leaderboards:{name}", args=[board["task"].slug])
        response = client.post(url, {"name": "Odd", field: value}, follow=True)
        assert response.status_code == 200
        text = " ".join(messages_of(response))
        assert "was not saved" in text
        assert ("has no scoring dataset" in text) if field == "round" else ("Unknown dataset id" in text)
        assert not model.objects.exists()


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
