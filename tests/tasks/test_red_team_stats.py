"""A red-teaming round's attack success rate, per category and per number of turns, and its cost
(tasks/red_team_stats.py), on the task page and in the round API: every figure computed by hand.

Round 1 holds five attempts (conversations judged), as annotation/red_team/ stores them:

| # | model_wrong | status              | tags                        | turns | cost  |
|---|-------------|---------------------|-----------------------------|-------|-------|
| 1 | True        | validated_correct   | contradiction, fabrication  | 1     | 0.01  |
| 2 | True        | validated_correct   | fabrication                 | 3     | 0.02  |
| 3 | True        | validated_incorrect | unanswerable                | 3     | 0.03  |
| 4 | True        | pending             | other                       | 2     | None  |
| 5 | False       | validated_correct   |                             | 1     | 0.04  |

so attempts 5, claimed 4 (#1-4), verified 2 (#1, #2): attack success rate 2/5, claimed rate 4/5;
contradiction 1/5, fabrication 2/5 (#1 counts in both), unanswerable 0/5 (#3 not verified), other 0/5;
1 turn: #1, #5 -> 1/2; 2 turns: #4 -> 0/1; 3 turns: #2, #3 -> 1/2; cost 0.01+0.02+0.03+0.04 = 0.10 with
one unknown, 0.10 / 2 = 0.05 per verified failure. Not attempts (as MER): a retracted and an imported
failure, a conversation without a model verdict. Three multiple-choice items (one retracted besides):
written 3, fooled 2, validated correct 1, MER 2/3.
Round 2: one verified failure of 2 turns tagged "other" and "legacy" (a category the config no longer
lists) costing 0.0003. Round 3: nothing.
"""

from __future__ import annotations

from decimal import Decimal
from html.parser import HTMLParser

import pytest

from annotation.models import Example
from core.clustered import clustered_rates
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Task
from tasks.red_team_stats import red_team_stats
from tasks.services import ensure_round, set_current_round

pytestmark = pytest.mark.django_db

#: What the page says beside a rate written by one person: no interval across people.
ONE = "no interval (1 person)"


def conversation(round_, annotator, model_wrong, status, tags, turns, cost, **extra):
    return Example.objects.create(
        round=round_,
        annotator=annotator,
        inputs={
            "messages": [{"role": "user", "content": "Who wrote it?"}, {"role": "assistant", "content": "X."}]
        },
        target={"supported": "no" if model_wrong else "yes", "helpful": "4"},
        model_wrong=model_wrong,
        status=status,
        tags=tags,
        metadata={"mode": "conversation", "conversation": 1, "model": "smol", "turns": turns, "cost": cost},
        **extra,
    )


def choice_item(round_, annotator, picked_wrong, status, **extra):
    return Example.objects.create(
        round=round_,
        annotator=annotator,
        inputs={"question": "Who wrote it?", "options": ["Ann", "Bob", "Cy"]},
        target={"answer": 0},
        model_wrong=picked_wrong,
        status=status,
        metadata={"mode": "multiple_choice", "model": "smol", "picked": 1 if picked_wrong else 0},
        **extra,
    )


@pytest.fixture
def red_task(annotator):
    task = Task.objects.create(slug="red-team", name="Red-team", config=RED_TEAM_CONFIG)
    round1 = ensure_round(task=task, number=1)
    conversation(round1, annotator, True, "validated_correct", ["contradiction", "fabrication"], 1, 0.01)
    conversation(round1, annotator, True, "validated_correct", ["fabrication"], 3, 0.02)
    conversation(round1, annotator, True, "validated_incorrect", ["unanswerable"], 3, 0.03)
    conversation(round1, annotator, True, "pending", ["other"], 2, None)
    conversation(round1, annotator, False, "validated_correct", [], 1, 0.04)
    conversation(round1, annotator, True, "validated_correct", ["fabrication"], 1, 5.0, is_retracted=True)
    conversation(round1, annotator, True, "validated_correct", ["fabrication"], 1, 5.0, source="imported")
    conversation(round1, annotator, None, "pending", [], 1, 5.0)
    choice_item(round1, annotator, True, "validated_correct")
    choice_item(round1, annotator, False, "pending")
    choice_item(round1, annotator, True, "pending")
    choice_item(round1, annotator, True, "validated_correct", is_retracted=True)
    round2 = ensure_round(task=task, number=2)
    conversation(round2, annotator, True, "validated_correct", ["other", "legacy"], 2, 0.0003)
    round3 = ensure_round(task=task, number=3)
    set_current_round(task=task, round_=round3)
    return task


def test_the_figures_by_hand(red_task, django_assert_num_queries):
    with django_assert_num_queries(3):  # the rounds, the examples of all of them, the validators' answers
        stats = red_team_stats(red_task)
    one, two, three = (stats[r.pk] for r in red_task.rounds.order_by("number"))

    assert (one.attempts, one.claimed, one.verified) == (5, 4, 2)
    assert (one.attack_success_rate, one.claimed_rate) == (2 / 5, 4 / 5)
    assert [(r.key, r.label, r.attempts, r.verified, r.rate) for r in one.by_category] == [
        ("contradiction", "Contradicts the passage", 5, 1, 1 / 5),
        ("fabrication", "Adds a detail the passage does not give", 5, 2, 2 / 5),
        ("unanswerable", "Answers what the passage cannot answer", 5, 0, 0.0),
        ("other", "Another failure", 5, 0, 0.0),
    ]
    assert [(r.key, r.label, r.attempts, r.verified, r.rate) for r in one.by_turns] == [
        ("1", "1 turn", 2, 1, 1 / 2),
        ("2", "2 turns", 1, 0, 0.0),
        ("3", "3 turns", 2, 1, 1 / 2),
    ]
    assert (one.cost, one.cost_unknown, one.cost_per_verified) == (Decimal("0.10"), 1, Decimal("0.05"))
    assert (one.items, one.items_fooled, one.items_validated, one.item_mer) == (3, 2, 1, 2 / 3)

    assert (two.attempts, two.verified, two.attack_success_rate) == (1, 1, 1.0)
    assert [(r.key, r.verified) for r in two.by_category] == [
        ("contradiction", 0),
        ("fabrication", 0),
        ("unanswerable", 0),
        ("other", 1),
        ("legacy", 1),
    ]
    assert (two.cost, two.cost_unknown, two.cost_per_verified) == (Decimal("0.0003"), 0, Decimal("0.0003"))
    assert (two.items, two.item_mer) == (0, None)

    assert (three.attempts, three.attack_success_rate, three.claimed_rate) == (0, None, None)
    assert (three.cost, three.cost_per_verified, three.by_turns) == (None, None, ())


def test_the_query_count_does_not_grow_with_the_examples(red_task, annotator, django_assert_num_queries):
    round1 = red_task.rounds.get(number=1)
    for _ in range(20):
        conversation(round1, annotator, True, "validated_correct", ["fabrication"], 2, 0.01)
    with django_assert_num_queries(2):  # the rounds given: the examples and the validators' answers
        stats = red_team_stats(red_task, [round1])
    assert (stats[round1.pk].attempts, stats[round1.pk].verified) == (25, 22)
    assert stats[round1.pk].cost == Decimal("0.30")


class Tables(HTMLParser):
    """Each table's caption and its rows, as the text of their cells (header cells included)."""

    def __init__(self, html: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._rows, self._caption, self._cell, self._in_caption = None, "", None, False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._rows, self._caption = [], ""
        elif tag == "caption":
            self._in_caption = True
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = ""
        elif tag == "br" and self._cell is not None:
            self._cell += " / "

    def handle_endtag(self, tag):
        if tag == "table" and self._rows is not None:
            self.tables[self._caption.strip()] = self._rows
            self._rows = None
        elif tag == "caption":
            self._in_caption = False
        elif tag in ("td", "th") and self._cell is not None:
            self._rows[-1].append(" ".join(self._cell.split()))
            self._cell = None

    def handle_data(self, data):
        if self._in_caption:
            self._caption += data
        elif self._cell is not None:
            self._cell += data


def test_the_task_page_shows_the_attack_success_rate_and_the_cost(client, red_task):
    html = client.get("/tasks/red-team/").content.decode()
    tables = Tables(html).tables

    assert tables["Attack success rate and model cost per round"] == [
        [
            "Round",
            "Conversations judged",
            "Failures claimed",
            "Verified failures",
            "Attack success rate",
            "Model cost",
            "Cost per verified failure",
            "Multiple-choice items",
            "Items that fooled the model",
            "Items validated correct",
        ],
        ["1", "5", "4 (80%)", "2", f"40% / {ONE}", "0.10 / 1 without a cost", "0.05", "3", "2 (67%)", "1"],
        ["2", "1", "1 (100%)", "1", f"100% / {ONE}", "under 0.01", "under 0.01", "0", "0", "0"],
        ["3", "0", "0", "0", "not measured", "unknown", "–", "0", "0", "0"],
    ]
    assert tables["Round 1: attack success rate by kind of failure, over its 5 conversations judged"] == [
        ["Kind of failure", "Verified failures", "Attack success rate"],
        ["Contradicts the passage", "1", f"20% / {ONE}"],
        ["Adds a detail the passage does not give", "2", f"40% / {ONE}"],
        ["Answers what the passage cannot answer", "0", f"0% / {ONE}"],
        ["Another failure", "0", f"0% / {ONE}"],
    ]
    assert tables["Round 1: attack success rate by number of turns"] == [
        ["Turns (messages answered)", "Conversations judged", "Verified failures", "Attack success rate"],
        ["1", "2", "1", f"50% / {ONE}"],
        ["2", "1", "0", f"0% / {ONE}"],
        ["3", "2", "1", f"50% / {ONE}"],
    ]
    assert tables["Round 2: attack success rate by number of turns"][1:] == [["2", "1", "1", f"100% / {ONE}"]]
    assert not any(caption.startswith("Round 3:") for caption in tables)  # no attempt, no breakdown
    # The MER wording gives way to the attack success rate on a red-teaming task's page.
    assert "Attack success rate per round" in html and "MER and vMER per round" not in html
    assert "vMER" not in html.replace("generative vMER", "") and "<th>MER</th>" not in html
    rounds = Tables(html).tables[""]  # the Rounds table has no caption, as before
    assert rounds[0][:3] == ["Round", "Collected", "Retracted"]


def test_the_round_api_gives_them(client, red_task):
    red = client.get("/api/tasks/red-team/rounds/1/").json()["statistics"]["red_team"]
    # One person wrote them all: no interval across people, Wilson's over the 5 conversations beside
    # (2 of 5: centre 0.78415/1.76829 = 0.44345, half 1.10839 * sqrt(0.048 + 0.038415) = 0.32583).
    overall = red.pop("across_people")
    assert overall["independent_interval"] == pytest.approx([0.117622, 0.769276], abs=2e-6)
    assert {k: v for k, v in overall.items() if k != "independent_interval"} == {
        "rate": 0.4,
        "n": 5.0,
        "interval": None,
        "people": 1,
        "effective_sample_size": 5.0,
        "interval_method": None,
    }
    for row in red["by_category"] + red["by_turns"]:
        across = row.pop("across_people")
        assert (across["interval"], across["people"]) == (None, 1)
        assert row.pop("unreliable") == ""
    # No validator answered the rubric here (the examples were settled directly): nothing to measure.
    agreement = red.pop("rubric_agreement")
    assert (agreement["floor"], agreement["unreliable"], agreement["unreliable_categories"]) == (
        0.667,
        None,
        {},
    )
    assert [
        (q["name"], q["level"], q["overall"]["items"], q["overall"]["alpha"]) for q in agreement["questions"]
    ] == [
        ("supported", "nominal", 0, None),
        ("helpful", "ordinal", 0, None),
    ]
    assert red.pop("cost_per_verified_failure_interval") is None
    assert red == {
        "attempts": 5,
        "claimed_failures": 4,
        "verified_failures": 2,
        "attack_success_rate": 0.4,
        "claimed_rate": 0.8,
        "by_category": [
            {
                "key": "contradiction",
                "label": "Contradicts the passage",
                "attempts": 5,
                "verified": 1,
                "rate": 0.2,
            },
            {
                "key": "fabrication",
                "label": "Adds a detail the passage does not give",
                "attempts": 5,
                "verified": 2,
                "rate": 0.4,
            },
            {
                "key": "unanswerable",
                "label": "Answers what the passage cannot answer",
                "attempts": 5,
                "verified": 0,
                "rate": 0.0,
            },
            {"key": "other", "label": "Another failure", "attempts": 5, "verified": 0, "rate": 0.0},
        ],
        "by_turns": [
            {"key": "1", "label": "1 turn", "attempts": 2, "verified": 1, "rate": 0.5},
            {"key": "2", "label": "2 turns", "attempts": 1, "verified": 0, "rate": 0.0},
            {"key": "3", "label": "3 turns", "attempts": 2, "verified": 1, "rate": 0.5},
        ],
        "cost": 0.1,
        "cost_unknown": 1,
        "cost_per_verified_failure": 0.05,
        "multiple_choice": {"items": 3, "fooled": 2, "validated_correct": 1, "mer": 2 / 3},
    }
    listed = client.get("/api/tasks/red-team/rounds/").json()["results"]
    assert [(r["number"], r["statistics"]["red_team"]["attack_success_rate"]) for r in listed] == [
        (1, 0.4),
        (2, 1.0),
        (3, None),
    ]
    assert listed[1]["statistics"]["red_team"]["cost"] == 0.0003


def test_a_classifier_task_has_none(client, hate_task, hate_round, annotator):
    Example.objects.create(
        round=hate_round,
        annotator=annotator,
        inputs={"statement": "x"},
        target={"label": "hateful"},
        model_wrong=True,
        status="validated_correct",
    )
    assert red_team_stats(hate_task) == {}
    statistics = client.get("/api/tasks/hate-speech/rounds/1/").json()["statistics"]
    assert "red_team" not in statistics and (statistics["mer"], statistics["vmer"]) == (1.0, 1.0)
    assert "red_team" not in client.get("/api/tasks/hate-speech/rounds/").json()["results"][0]["statistics"]
    html = client.get("/tasks/hate-speech/").content.decode()
    assert "ttack success rate" not in html and "MER and vMER per round" in html
    assert Tables(html).tables[""][0][:6] == [
        "Round",
        "Collected",
        "Model-fooling",
        "MER",
        "Verified model-fooling",
        "vMER",
    ]


def test_rates_across_people(red_task, django_user_model, client):
    """Six people: (verified, attempts) = (2, 3), (0, 2), (1, 1), (0, 3), (1, 2), (0, 1), so R = 4/12;
    residuals y - R n = 1, -2/3, 2/3, -1, 1/3, -1/3, squares 28/9; V = 6/5 * (28/9) / 144 and the
    effective sample R(1 - R) / V = (2/9) * 144 * 45 / 168 = 60/7 = 8.571 of 12 conversations."""
    round4 = ensure_round(task=red_task, number=4)
    plan = [(2, 3), (0, 2), (1, 1), (0, 3), (1, 2), (0, 1)]
    for i, (verified, attempts) in enumerate(plan):
        person = django_user_model.objects.create_user(username=f"person{i}", password="x")
        for k in range(attempts):
            fooled = k < verified
            conversation(round4, person, fooled, "validated_correct" if fooled else "pending",
                         ["fabrication"] if fooled else [], 1 + k % 2, 0.01)  # fmt: skip
    stats = red_team_stats(red_task, [round4])[round4.pk]
    asr = stats.asr
    assert (asr.rate, asr.people, asr.n) == (4 / 12, 6, 12)
    assert asr.effective_n == pytest.approx(60 / 7)
    # Only 3 people have a verified failure (under 5): a sparse row, Wilson's interval on the effective
    # sample: p = 1/3, n = 60/7, z = 1.96: centre (1/3 + 0.22409) / 1.44817 = 0.38491, half 1.35340 *
    # sqrt(0.025926 + 0.013072) = 0.26727: [0.1176, 0.6522].
    assert asr.method == "Wilson over the effective sample"
    assert asr.interval == pytest.approx((0.1176, 0.6522), abs=1e-4)
    low, high = asr.interval
    assert (
        asr.interval
        == clustered_rates([v for v, _ in plan], [n for _, n in plan], seed=round4.pk)[0].interval
    )  # the people's sums, as the kernel gets them
    [fabrication] = [r for r in stats.by_category if r.key == "fabrication"]
    assert fabrication.clustered.rate == 4 / 12 and fabrication.clustered.people == 6
    one_turn = stats.by_turns[0]
    # Turns alternate 1, 2, 1: people with 2, 1, 1, 2, 1, 1 one-turn conversations (8); failures of one
    # turn: person 0's first, person 2's and person 4's (3; person 0's second failure has 2 turns).
    assert (one_turn.key, one_turn.attempts, one_turn.verified) == ("1", 8, 3)
    assert one_turn.clustered.people == 6
    cost_low, cost_high = stats.cost_per_verified_interval
    assert 0 <= cost_low <= 0.03 <= cost_high  # 0.12 / 4 = 0.03
    html = client.get("/tasks/red-team/").content.decode()
    assert f"95% interval {low * 100:.0f}%–{high * 100:.0f}%*<br>6 people, effective n 9 of 12" in html
    assert "few people with a failure, or without one" in html
    assert "under 30 people, it may be too narrow" in html
    # The chart draws the interval as a whisker through round 4's point.
    assert f"Attack success rate 4: 95% interval {low:.1%} to {high:.1%}" in html
    api = client.get("/api/tasks/red-team/rounds/4/").json()["statistics"]["red_team"]["across_people"]
    assert api["interval"] == pytest.approx([low, high])
    assert (api["people"], api["interval_method"]) == (6, "Wilson over the effective sample")
    assert api["effective_sample_size"] == pytest.approx(60 / 7)
