"""The leaderboard page: weights and sort in the URL (each weight given back exactly, in the form and the
sort links, as the shortest text that reads as the same number), rounds, visibility, incomplete rows,
bad queries (digits other than ASCII, or too many of them, named in a message, never a 500; ascii_id
itself: tests/core/test_ascii_id.py)."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from leaderboards.models import Dataset, LeaderboardFork
from leaderboards.tables import weight_text


def order(response) -> list[int]:
    """Model ids in the order of the table's rows."""
    return [int(pk) for pk in re.findall(r'data-model="(\d+)"', response.content.decode())]


@pytest.fixture
def board(hate_task, hate_round, make_dataset, make_model, score):
    """Three published models on one scoring dataset of round 1 (hand values below).

    Memory, fairness and robustness are equal for all, so their AMRS is 0 and they are left out; the
    Dynascore is ω̃_perf * perf + ω̃_thr * throughput / AMRS_thr. Sorted by perf: R 0.3, Q 0.6, P 0.9;
    AMRS_thr = mean(|400 - 250| / 0.3, |100 - 400| / 0.3) = mean(500, 1000) = 750.
    """
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


def zero_but(**weights):
    query = {f"w_{m}": 0 for m in ("perf", "throughput", "memory", "fairness", "robustness")}
    query.update({f"w_{k}": v for k, v in weights.items()})
    return query


def test_default_weights_rank_by_the_formula(client, board):
    # ω̃ = 4/8 perf, 1/8 each other; P = 0.45 + 0.125 * 100/750 = 0.4667, Q = 0.3 + 0.125 * 400/750 = 0.3667,
    # R = 0.15 + 0.125 * 250/750 = 0.1917.
    response = client.get(board["url"])
    assert response.status_code == 200
    assert order(response) == [board["P"].pk, board["Q"].pk, board["R"].pk]
    rows = {r["name"]: r for r in response.context["table"]["rows"]}
    assert rows["P"]["dynascore"] == pytest.approx(0.45 + 0.125 * 100 / 750)
    assert rows["R"]["dynascore"] == pytest.approx(0.15 + 0.125 * 250 / 750)
    html = response.content.decode()
    assert "750" in html  # AMRS of throughput shown
    assert re.search(r"left out</strong>: AMRS is zero", html)
    assert response.context["table"]["left_out"].keys() == {"memory", "fairness", "robustness"}


def test_weights_in_the_url_change_the_ranking(client, board):
    # Throughput only: Dynascore = throughput / 750 -> Q 0.5333, R 0.3333, P 0.1333.
    response = client.get(board["url"], zero_but(throughput=1))
    assert order(response) == [board["Q"].pk, board["R"].pk, board["P"].pk]
    rows = {r["name"]: r for r in response.context["table"]["rows"]}
    assert rows["Q"]["dynascore"] == pytest.approx(400 / 750)
    assert "0.5333" in response.content.decode()
    # Perf only: the perf order.
    response = client.get(board["url"], zero_but(perf=1))
    assert order(response) == [board["P"].pk, board["Q"].pk, board["R"].pk]
    # The form keeps the weights in the URL (GET) and shows them back.
    assert 'name="w_throughput" min="0" step="any" value="0"' in response.content.decode()


def test_dataset_weights_in_the_url(client, board, make_dataset, score):
    hc = make_dataset("hc")
    score(board["P"], hc, 0.1, throughput=100)
    score(board["Q"], hc, 0.2, throughput=400)
    score(board["R"], hc, 0.9, throughput=250)
    only_hc = {**zero_but(perf=1), f"d_{board['d'].pk}": 0, f"d_{hc.pk}": 1}
    response = client.get(board["url"], only_hc)
    assert order(response) == [board["R"].pk, board["Q"].pk, board["P"].pk]
    # Equal weights: P (0.9 + 0.1) / 2 = 0.5, Q 0.4, R 0.6.
    response = client.get(board["url"], zero_but(perf=1))
    assert order(response) == [board["R"].pk, board["P"].pk, board["Q"].pk]
    assert response.context["table"]["rows"][0]["metrics"]["perf"] == pytest.approx(0.6)


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


@pytest.mark.parametrize(
    "sort, direction, expected",
    [
        ("throughput", "asc", ["P", "R", "Q"]),
        ("throughput", "desc", ["Q", "R", "P"]),
        ("perf", "asc", ["R", "Q", "P"]),
        ("model", "desc", ["R", "Q", "P"]),
        ("dynascore", "asc", ["R", "Q", "P"]),
    ],
)
def test_sorting_by_a_column(client, board, sort, direction, expected):
    response = client.get(board["url"], {"sort": sort, "dir": direction})
    assert order(response) == [board[name].pk for name in expected]


def test_sorting_by_a_dataset_column_puts_missing_last(client, board, make_dataset, score):
    hc = make_dataset("hc")
    score(board["P"], hc, 0.2)
    score(board["R"], hc, 0.8)
    for direction in ("asc", "desc"):
        response = client.get(board["url"], {"sort": f"d{hc.pk}", "dir": direction})
        assert order(response)[-1] == board["Q"].pk
    response = client.get(board["url"], {"sort": f"d{hc.pk}", "dir": "desc"})
    assert order(response)[:2] == [board["R"].pk, board["P"].pk]


def test_model_missing_a_score_is_shown_incomplete(client, board, make_dataset, make_model, score):
    hc = make_dataset("hc")
    for name in ("P", "Q", "R"):
        score(board[name], hc, 0.5)
    newcomer = make_model("Newcomer")
    score(newcomer, board["d"], 0.95, throughput=50)  # no HateCheck score
    never_scored = make_model("Unscored")
    response = client.get(board["url"])
    rows = {r["name"]: r for r in response.context["table"]["rows"]}
    assert not rows["Newcomer"]["complete"] and rows["Newcomer"]["missing"] == ["HC"]
    assert rows["Newcomer"]["dynascore"] is not None
    assert not rows["Unscored"]["complete"] and rows["Unscored"]["dynascore"] is None
    assert order(response)[-1] == never_scored.pk
    html = response.content.decode()
    assert html.count(">incomplete</span>") == 2
    assert "no score" in html


def test_per_round_view(client, board, hate_task, make_dataset, score):
    from tasks.services import ensure_round

    round2 = ensure_round(task=hate_task, number=2)
    d2 = make_dataset("r2", round_=round2)
    hc = make_dataset("hc")
    score(board["P"], d2, 0.1)
    response = client.get(board["url"], {"round": 2})
    ids = [d["id"] for d in response.context["table"]["datasets"]]
    assert ids == [d2.pk]
    assert hc.pk not in ids
    assert "R2 (perf)" in response.content.decode() and "R1 (perf)" not in response.content.decode()
    response = client.get(board["url"], {"round": 1})
    assert [d["id"] for d in response.context["table"]["datasets"]] == [board["d"].pk]


@pytest.mark.parametrize(
    "query, message",
    [
        ({"w_perf": "-1"}, "must be a number from 0"),
        ({"w_perf": "abc"}, "is not a number"),
        ({"w_perf": "inf"}, "must be a number from 0"),
        ({"d_99999": "3"}, "Unknown dataset id"),
        ({"d_abc": "3"}, "Unknown dataset id"),
        ({"w_bogus": "3"}, "Unknown metric"),
        (zero_but(), "All metric weights are zero"),
        ({"sort": "drop table"}, "Cannot sort by"),
        ({"dir": "sideways"}, "is not asc or desc"),
        ({"round": "x"}, "has no scoring dataset"),
        ({"round": "7"}, "has no scoring dataset"),
    ],
)
def test_bad_query_values_show_a_message_and_defaults(client, board, query, message):
    response = client.get(board["url"], query)
    assert response.status_code == 200
    assert any(message in m for m in response.context["query_messages"]), response.context["query_messages"]
    assert message in response.content.decode().replace("&#x27;", "'")
    assert order(response) == [board["P"].pk, board["Q"].pk, board["R"].pk]  # the default ranking


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


def test_all_dataset_weights_zero(client, board):
    response = client.get(board["url"], {f"d_{board['d'].pk}": "0"})
    assert "All dataset weights are zero" in response.content.decode()
    assert order(response) == [board["P"].pk, board["Q"].pk, board["R"].pk]


def test_no_scoring_dataset(client, hate_task, make_model, make_dataset):
    make_model("Lonely")
    make_dataset("std", access=Dataset.Access.STANDARD)
    response = client.get(reverse("leaderboards:leaderboard", args=[hate_task.slug]))
    assert response.status_code == 200
    assert "no scoring dataset yet" in response.content.decode()
    assert "Lonely" in response.content.decode()


def test_unknown_task_is_404(client, db):
    assert client.get("/tasks/no-such-task/leaderboard/").status_code == 404


def test_unpublished_models_only_for_their_owner_and_task_owners(
    client, board, owner, annotator, outsider, password, make_model, score
):
    hidden = make_model("Secret", owner=annotator, published=False)
    score(hidden, board["d"], 0.99)
    for user, sees in ((None, False), (outsider, False), (annotator, True), (owner, True)):
        client.logout()
        if user:
            client.force_login(user)
        response = client.get(board["url"])
        assert (hidden.pk in order(response)) is sees, user
        assert ("Secret" in response.content.decode()) is sees
        page = client.get(reverse("leaderboards:model", args=[hidden.pk]))
        assert page.status_code == (200 if sees else 404)


def test_anonymous_models_are_masked_for_others(client, board, owner, annotator, outsider, make_model, score):
    anon = make_model("Famous Lab Model", owner=annotator, anonymous=True)
    score(anon, board["d"], 0.5)
    client.force_login(outsider)
    html = client.get(board["url"]).content.decode()
    assert "Famous Lab Model" not in html and "Anonymous model 1" in html
    page = client.get(reverse("leaderboards:model", args=[anon.pk])).content.decode()
    assert "Famous Lab Model" not in page and "Anonymous model 1" in page and "annotator" not in page
    for user in (annotator, owner):
        client.force_login(user)
        html = client.get(board["url"]).content.decode()
        assert "Famous Lab Model" in html and "anonymous to others" in html


def test_task_page_links_the_leaderboard(client, hate_task):
    html = client.get(reverse("tasks:detail", args=[hate_task.slug])).content.decode()
    assert reverse("leaderboards:leaderboard", args=[hate_task.slug]) in html


def test_query_count_does_not_grow_with_models(
    client, board, make_model, score, django_assert_max_num_queries
):
    for i in range(30):
        m = make_model(f"extra-{i}", anonymous=i % 2 == 0)
        score(m, board["d"], i / 40)
    with django_assert_max_num_queries(15):
        response = client.get(board["url"])
    assert len(order(response)) == 33


def test_the_dynascore_table_scrolls_in_its_own_box(client, board):
    """'How the Dynascore was computed' was wider than a phone (390 px) and made the page scroll sideways;
    it sits in the site's ``table-scroll`` box like the other wide tables."""
    assert '<div class="table-scroll"><table class="amrs">' in client.get(board["url"]).text
