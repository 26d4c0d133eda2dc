"""The side-by-side ratings' figures (annotation/red_team/ratings.py) against values worked by hand, and
the rated pairs in the arena's votes (generative_bench/arena/selectors.py): counted apart from battles,
left out under the battles' rules."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import AnonymousUser

from annotation.models import CandidateRating, Conversation, Turn
from annotation.red_team.ratings import model_ratings, outcome, rated_pairs
from core.clustered import clustered_ratio_interval
from core.pairwise import Vote
from generative_bench.arena.selectors import arena_summary, ranking_table, votes_of
from models_registry.models import RegisteredModel
from tasks.models import TaskWorker
from tests.factories.accounts import UserFactory
from tests.factories.red_team import make_side_by_side_round

#: Per conversation: writer, (alpha's score, failed), (beta's score, failed), the letter chosen.
RATED = [
    (0, (80, False), (40, True), "A"),
    (1, (60, False), (60, False), "B"),
    (2, (70, False), (30, True), "A"),
    (3, (90, False), (20, True), "A"),
    (4, (50, True), (50, False), "B"),
    (0, (100, False), (10, False), "A"),
]


@pytest.fixture
def sbs_round(db):
    return make_side_by_side_round("http://127.0.0.1:9/v1", names=("alpha", "beta"))


def rate(round_, writer, ratings, chosen, answers=("A short answer.", "Another answer.")):
    """A side-by-side conversation of ``writer`` already rated: alpha in slot A, beta in slot B."""
    models = {t.model.name: t.model for t in round_.targets.select_related("model")}
    conversation = Conversation.objects.create(
        round=round_, annotator=writer, model=models["alpha"], side_by_side=2
    )
    for slot, (name, (score, failed)) in enumerate(zip(("alpha", "beta"), ratings, strict=True)):
        turn = Turn.objects.create(
            conversation=conversation,
            index=0,
            slot=slot,
            model=models[name],
            prompt="Hi",
            answer=answers[slot],
            status="answered",
        )
        CandidateRating.objects.create(
            turn=turn,
            score=score,
            answers={},
            failed=failed,
            tags=["fabrication"] if failed else [],
            chosen=turn.slot_letter == chosen,
        )
    return conversation


@pytest.fixture
def rated(sbs_round):
    writers = [UserFactory() for _ in range(5)]
    for writer, alpha, beta, chosen in RATED:
        rate(sbs_round, writers[writer], (alpha, beta), chosen)
    return writers


def test_the_figures_per_model_by_hand(sbs_round, rated):
    alpha, beta = model_ratings(sbs_round.task)
    # alpha: (80 + 60 + 70 + 90 + 50 + 100) / 6 = 75; 1 failure of 6; chosen 4 of 6.
    assert (alpha.model, alpha.shown, alpha.people, alpha.mean_score) == ("alpha", 6, 5, 75.0)
    assert (alpha.failure.rate, alpha.chosen.rate) == (pytest.approx(1 / 6), pytest.approx(4 / 6))
    # beta: (40 + 60 + 30 + 20 + 50 + 10) / 6 = 35; 3 failures of 6; chosen 2 of 6.
    assert (beta.model, beta.shown, beta.mean_score) == ("beta", 6, 35.0)
    assert (beta.failure.rate, beta.chosen.rate) == (pytest.approx(3 / 6), pytest.approx(2 / 6))
    # The score's interval is the cluster bootstrap over writers of sum(scores) / ratings, writer 0's
    # two ratings kept together (180 over 2).
    expected = clustered_ratio_interval(np.array([180, 60, 70, 90, 50.0]), np.array([2, 1, 1, 1, 1.0]))
    assert alpha.score_interval == pytest.approx(expected)
    assert alpha.score_interval[0] < 75 < alpha.score_interval[1]
    assert beta.score_interval[0] < 35 < beta.score_interval[1]
    assert alpha.failure.interval is not None and alpha.failure.people == 5
    # One round's figures only when asked.
    assert model_ratings(sbs_round.task, 2) == []


def test_fewer_than_five_writers_have_figures_and_no_interval(sbs_round):
    writers = [UserFactory() for _ in range(4)]
    for writer in writers:
        rate(sbs_round, writer, ((60, False), (40, False)), "A")
    alpha, _beta = model_ratings(sbs_round.task)
    assert (alpha.mean_score, alpha.score_interval, alpha.failure.interval) == (60.0, None, None)


def test_each_rated_pair_is_an_arena_vote_counted_apart(sbs_round, rated):
    assert [outcome(a, b) for a, b in [(80, 40), (60, 60), (30, 70)]] == ["a", "tie", "b"]
    pairs = rated_pairs(sbs_round.task)
    assert [outcome(p[2], p[3]) for p in pairs] == ["a", "tie", "a", "a", "tie", "a"]
    votes = votes_of(sbs_round.task)
    alpha, beta = (t.model_id for t in sbs_round.targets.order_by("position"))
    assert votes.rated_pairs == 6 and len(votes.votes) == 6
    assert votes.votes[1] == Vote(alpha, beta, "tie")
    RegisteredModel.objects.update(is_published=True)
    table = ranking_table(sbs_round.task, AnonymousUser(), arena_summary(sbs_round.task, samples=20))
    assert (table["n_votes"], table["rated_pairs"], table["battle_votes"]) == (6, 6, 0)
    assert [row["name"] for row in table["rows"]] == ["alpha", "beta"]  # 4 wins and 2 ties


def test_a_held_writer_and_an_answer_naming_a_model_are_left_out(sbs_round, rated):
    TaskWorker.objects.create(task=sbs_round.task, user=rated[1], held_at="2026-12-01T00:00:00Z")
    rate(sbs_round, rated[2], ((60, False), (50, False)), "A", answers=("As beta would say, hello.", "Hi."))
    votes = votes_of(sbs_round.task)
    # 7 pairs: writer 1's is held, the new one names a model; 5 counted.
    assert (votes.rated_pairs, votes.left_out["held"], votes.left_out["not_anonymous"]) == (5, 1, 1)


def test_the_task_page_and_the_api_show_the_table(sbs_round, rated, client):
    RegisteredModel.objects.update(is_published=True)
    html = client.get("/tasks/red-sbs/").content.decode()
    assert "Models side by side" in html and 'class="chart interval-chart"' in html
    assert "<td>75.0</td>" in html and "<td>35.0</td>" in html and '<th scope="row">alpha</th>' in html
    rows = client.get("/api/tasks/red-sbs/rounds/1/side-by-side/").json()
    assert [(r["model"], r["shown"], r["mean_score"]) for r in rows] == [
        ("alpha", 6, 75.0),
        ("beta", 6, 35.0),
    ]
    assert rows[0]["chosen_rate"]["rate"] == pytest.approx(4 / 6) and len(rows[0]["score_interval"]) == 2
    assert client.get("/api/tasks/red-sbs/rounds/2/side-by-side/").status_code == 404
    assert client.get("/api/tasks/red-sbs/rounds/x/side-by-side/").status_code == 404


def test_an_unpublished_model_is_not_named_to_the_public(sbs_round, rated, client):
    rows = client.get("/api/tasks/red-sbs/rounds/1/side-by-side/").json()
    assert {r["model"] for r in rows} == {"Unpublished model 1", "Unpublished model 2"}
    assert '<th scope="row">alpha</th>' not in client.get("/tasks/red-sbs/").content.decode()


def test_the_interval_chart_geometry():
    from tasks.charts import LABEL_COLUMN, RIGHT, interval_chart

    chart = interval_chart(
        [("a", 75.0, (60.0, 90.0)), ("b", None, None)], low=1, high=100, ticks=(1, 50, 100), width=560
    )
    plot = 560 - LABEL_COLUMN - RIGHT
    assert chart.rows[0].x == pytest.approx(LABEL_COLUMN + (75 - 1) / 99 * plot)
    assert chart.rows[1].x is None and "95% interval 60 to 90" in chart.svg
    with pytest.raises(ValueError):
        interval_chart([("a", 101.0, None)], low=1, high=100, ticks=())


def test_a_blocked_writer_who_never_battled_is_left_out_and_the_ranking_refits(sbs_round, rated):
    before = arena_summary(sbs_round.task, samples=20)
    assert before.rated_pairs == 6
    rated[3].is_blocked = True
    rated[3].save(update_fields=["is_blocked"])
    votes = votes_of(sbs_round.task)
    assert (votes.rated_pairs, votes.left_out["blocked"]) == (5, 1)
    # The cached fit is keyed on the writers left out, so blocking one refits it.
    assert arena_summary(sbs_round.task, samples=20).rated_pairs == 5
