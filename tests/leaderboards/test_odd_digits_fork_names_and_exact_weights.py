"""The leaderboard page's queries and forms: odd digits in query strings and posts are named, not a
500; forks get their own slugs and ask before replacing; bad weights are refused and shown again;
weights survive a re-submit exactly. (Found by a tester; ascii_id itself: tests/core/test_ascii_id.py.)"""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from leaderboards.models import LeaderboardFork, LeaderboardSnapshot
from leaderboards.tables import weight_text


def order(response) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-model="(\d+)"', response.content.decode())]


@pytest.fixture
def board(hate_task, hate_round, make_dataset, make_model, score):
    """P, Q, R with perf 0.9, 0.6, 0.3 on round 1's scoring dataset (default ranking P, Q, R)."""
    d = make_dataset("r1", round_=hate_round)
    p, q, r = make_model("P"), make_model("Q"), make_model("R")
    score(p, d, 0.9, throughput=100)
    score(q, d, 0.6, throughput=400)
    score(r, d, 0.3, throughput=250)
    return {
        "d": d,
        "P": p,
        "Q": q,
        "R": r,
        "task": hate_task,
        "url": reverse("leaderboards:leaderboard", args=[hate_task.slug]),
    }


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


# --- 1. Query strings that gave a 500 ------------------------------------------------------------

LONG_DIGITS = "9" * 5000


@pytest.mark.parametrize(
    "query, message",
    [
        ({"round": "²"}, "has no scoring dataset"),
        ({"round": "¹"}, "has no scoring dataset"),
        ({"round": "١"}, "has no scoring dataset"),  # Arabic-Indic one: not round 1
        ({"round": LONG_DIGITS}, "has no scoring dataset"),
        ({"d_¹": "1"}, "Unknown dataset id"),
        ({"d_²": "1"}, "Unknown dataset id"),
        ({f"d_{LONG_DIGITS}": "1"}, "Unknown dataset id"),
        ({"w_perf": "١"}, "is not a number"),  # float() would read it as 1
        ({"w_perf": "1_0"}, "is not a number"),
        ({"w_perf": "1" * 5000}, "is not a number"),
    ],
)
def test_odd_digits_in_the_query_are_named_not_a_500(client, board, query, message):
    for url in (board["url"], reverse("leaderboards:fork", args=[board["task"].slug, "f"])):
        if "forks" in url:
            LeaderboardFork.objects.get_or_create(task=board["task"], slug="f", defaults={"name": "F"})
        response = client.get(url, query)
        assert response.status_code == 200
        assert any(message in m for m in response.context["query_messages"]), response.context[
            "query_messages"
        ]
        assert order(response) == [board["P"].pk, board["Q"].pk, board["R"].pk]


def test_arabic_indic_dataset_id_is_not_read_as_an_ascii_id(client, board):
    # ١ is U+0661; with isdigit()/int() it was read as dataset 1 (here: the board's dataset id in
    # Arabic-Indic digits would have set its weight). Now it is unknown and the weight stays 1.
    arabic = "".join(chr(0x660 + int(c)) for c in str(board["d"].pk))
    response = client.get(board["url"], {f"d_{arabic}": "0"})
    assert response.status_code == 200
    assert any("Unknown dataset id" in m for m in response.context["query_messages"])
    assert response.context["table"]["datasets"][0]["weight"] == 1.0


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


# --- 2. Forks whose slugs collide, and bad weights ------------------------------------------------


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


# --- 3. Weights round-trip exactly -----------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [
        (0.1234567, "0.1234567"),
        (0.00001, "1e-05"),
        (4.0, "4"),
        (0.0, "0"),
        (1 / 3, "0.3333333333333333"),
        (1_000_000.0, "1000000"),
        (2.5, "2.5"),
    ],
)
def test_weight_text_is_the_shortest_exact_form(value, text):
    assert weight_text(value) == text
    assert float(text) == value


def test_weights_survive_resubmit_and_resort_exactly(client, board):
    query = {"w_perf": "0.1234567", "w_memory": "0.00001", f"d_{board['d'].pk}": "0.333333333333"}
    response = client.get(board["url"], query)
    html = unescape(response.content.decode())
    # Form inputs carry the exact values and take any step.
    assert re.search(r'name="w_perf" min="0" step="any" value="0.1234567"', html)
    assert re.search(r'name="w_memory" min="0" step="any" value="1e-05"', html)
    assert re.search(rf'name="d_{board["d"].pk}" min="0" step="any" value="0.333333333333"', html)
    # Sort links too (was w_perf=0.123457).
    links = re.findall(r'href="([^"]*sort=throughput[^"]*)"', html)
    assert links and "w_perf=0.1234567&" in links[0] and "w_memory=1e-05&" in links[0]
    # Re-submitting what the page shows gives the same weights.
    again = client.get(links[0])
    assert again.context["table"]["metric_weights"]["perf"] == 0.1234567
    assert again.context["table"]["metric_weights"]["memory"] == 0.00001
    assert again.context["table"]["datasets"][0]["weight"] == 0.333333333333
    assert again.context["query_messages"] == []
