"""Rating replayed answers by people (``generative_bench.replay.services.open_rating``): a rating example
per answered conversation, served on the validate page (never naming the model) and settled by quorum
("incorrect" when people judge the answer failed); kept out of every figure of collected data; and the
figures the generative leaderboard reads (``people_rates``, ``replay_figures``), computed by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation.exports import iter_records
from annotation.models import Example
from cycle.dashboard.figures import task_dashboard
from cycle.releases.services import released_records
from generative_bench.jobs import run_replay_job
from generative_bench.models import Replay, ReplayAnswer
from generative_bench.replay.selectors import Rate, people_rates, replay_figures
from generative_bench.replay.services import ReplayError, open_rating, request_replay
from leaderboards.annotators.board import annotator_board
from leaderboards.models import DatasetItem
from leaderboards.services import build_round_datasets
from tasks.red_team_stats import red_team_stats
from tasks.round_stats import round_counts
from tests.factories.accounts import UserFactory
from tests.factories.validation import submit_served
from tests.generative_bench.replay_world import install_stand_in, replay_world
from validation.agreement import round_agreement
from validation.selectors import annotator_round_stats, open_examples

pytestmark = pytest.mark.django_db

FAILED = {"supported": "no", "helpful": "3"}  # "no" is a failure answer
GOOD = {"supported": "yes", "helpful": "5"}


@pytest.fixture
def world(smollm2_dir, monkeypatch, owner):
    """The replay world, replayed (keep) by ``second`` with the stand-in model, its task owned by
    ``owner``."""
    world = replay_world(smollm2_dir)
    world["task"].owners.add(owner)
    install_stand_in(monkeypatch)
    replay = request_replay(round_=world["round"], model=world["second"])
    assert run_replay_job(replay.pk) == "done"
    world["replay"] = Replay.objects.get(pk=replay.pk)
    return world


def _rating(world, name) -> Example:
    return ReplayAnswer.objects.get(replay=world["replay"], example=world[name]).rating_example


def test_each_answered_conversation_gets_one_rating_example_naming_no_model(world, owner, annotator):
    with pytest.raises(ReplayError) as refused:
        open_rating(replay=world["replay"], user=annotator)
    assert refused.value.code == "not_owner"
    assert open_rating(replay=world["replay"], user=owner) == 3  # one, two, rtl; not the item
    assert open_rating(replay=world["replay"], user=owner) == 0  # idempotent
    two = _rating(world, "two")
    assert two.inputs == {
        "messages": [
            {"role": "user", "content": "Where does the Amazon flow?"},
            {"role": "assistant", "content": "Through Brazil."},  # kept: the target's stored answer
            {"role": "user", "content": "And how long is it?"},
            {"role": "assistant", "content": "answer to And how long is it?"},  # the replayed answer
        ]
    }
    assert (two.source, two.annotator, two.round, two.context) == (
        "rating",
        None,
        world["round"],
        world["passage"],
    )
    assert (two.target, two.model_wrong, two.status) == ({}, None, "pending")
    assert two.metadata == {"mode": "conversation", "turns": 2}
    assert "second" not in str(two.inputs) + str(two.metadata) + str(two.tags)
    assert ReplayAnswer.objects.get(replay=world["replay"], example=world["item"]).rating_example is None


def test_the_validate_page_serves_rating_examples_and_a_quorum_settles_them(world, owner, client):
    Example.objects.filter(pk=world["pending"].pk).update(is_retracted=True)  # only rating examples to serve
    open_rating(replay=world["replay"], user=owner)
    rating = {_rating(world, n).pk for n in ("one", "two", "rtl")}
    assert set(open_examples(world["round"]).values_list("pk", flat=True)) == rating
    judge = UserFactory(username="judge")
    client.force_login(judge)
    html = client.get("/tasks/red-team/validate/?round=1").content.decode()
    assert "Is the model&#x27;s output good enough?" in html or "Is the model's output good enough?" in html
    assert "answer to " in html and 'name="rubric-supported"' in html
    assert "second" not in html  # never which model answered

    one = _rating(world, "one")
    judges = [UserFactory(username=f"v{i}") for i in range(3)]
    verdicts = [
        submit_served(example=one, validator=v, verdict="correct", rubric_answers=FAILED) for v in judges
    ]
    # No author's judgement (model_wrong None): people finding it failed disagree with "did not fail".
    assert [o.validation.verdict for o in verdicts] == ["incorrect"] * 3
    one.refresh_from_db()
    assert one.status == "validated_incorrect"  # people judged the replayed answer failed
    two = _rating(world, "two")
    for v in judges:
        submit_served(example=two, validator=v, verdict="incorrect", rubric_answers=GOOD)
    two.refresh_from_db()
    assert two.status == "validated_correct"
    rates = people_rates(world["task"])
    assert rates[(world["second"].pk, world["round"].pk)] == Rate(failed=1, judged=2, source="rating")
    assert rates[(world["second"].pk, world["round"].pk)].rate == 0.5
    # The round's target: its red-teaming figures (tasks.red_team_stats): verified failures "one" and
    # "two" of the four attempts (one, two, rtl, flagged; "pending" was retracted above, as "retracted").
    assert rates[(world["target"].pk, world["round"].pk)] == Rate(failed=2, judged=4, source="red_team")


def test_rating_examples_count_in_no_figure_of_collected_data(world, owner, annotator, client):
    round_, task = world["round"], world["task"]

    def figures():
        counts = round_counts(round_)
        board = annotator_board(task)
        return {
            "round": (counts.collected, counts.scored, counts.unscored, counts.fooling, counts.verified,
                      counts.flagged, counts.retracted, counts.agreement),
            "red_team": red_team_stats(task)[round_.pk],
            "export": [(r["example_id"], r["source"]) for r in iter_records(task)],
            "release": {split: [r["example_id"] for r in rows] for split, rows in released_records(round_)[0].items()},
            "annotators": [(r.name, r.collected, r.scored, r.verified, r.rejected, r.flagged) for r in board.rows],
            "authors": [(s.user_id, s.submitted, s.fooling, s.verified_fooling) for s in annotator_round_stats(task)],
            "settled": [row.settled for row in task_dashboard(task).rounds],
            "quality": [(v.user_id, v.votes) for v in round_agreement(round_).validators],
        }  # fmt: skip

    before = figures()
    open_rating(replay=world["replay"], user=owner)
    judges = [UserFactory(username=f"r{i}") for i in range(3)]
    for name, answers in (("one", FAILED), ("two", GOOD)):
        for v in judges:
            submit_served(
                example=_rating(world, name), validator=v, verdict="correct", rubric_answers=answers
            )
    flagged = _rating(world, "rtl")
    for v in judges:
        submit_served(example=flagged, validator=v, verdict="flagged")
    assert Example.objects.filter(source="rating").exclude(status="pending").count() == 3
    after = figures()
    assert after["round"] == before["round"]  # MER, vMER, collected, flagged and agreement unchanged
    assert after["red_team"] == before["red_team"]  # the attack success rate's figures
    assert after["export"] == before["export"] and all(s != "rating" for _, s in after["export"])
    assert after["release"] == before["release"]
    assert after["annotators"] == before["annotators"]
    assert after["settled"] == before["settled"] and after["quality"] == before["quality"] == []
    assert [a for a in after["authors"] if a[1]] == [a for a in before["authors"] if a[1]]
    assert all(user_id is not None for user_id, *_ in after["authors"])
    # Scoring datasets: the round's validated multiple-choice item only.
    build_round_datasets(round_)
    assert list(DatasetItem.objects.values_list("example_id", flat=True)) == [world["item"].pk]
    # "My examples" of the validators who judged them, and of the task's owner: no rating example.
    for user in (judges[0], owner):
        client.force_login(user)
        assert "answer to " not in client.get("/me/examples/").content.decode()


def test_replay_figures_are_computed_from_the_stored_answers(world):
    """Hand-set figures on the stored answers of two replays (keep and regenerate) of one round."""
    replay = world["replay"]
    stored = {
        name: ReplayAnswer.objects.get(replay=replay, example=world[name]) for name in ("one", "two", "rtl")
    }
    for name, (tokens, seconds, ttft, cost) in {
        "one": (10, 2.0, 0.2, Decimal("0.003")),
        "two": (30, 4.0, 0.6, None),  # cost unknown: out of the mean
        "rtl": (20, 2.0, 0.4, Decimal("0.001")),
    }.items():
        ReplayAnswer.objects.filter(pk=stored[name].pk).update(
            tokens=tokens, seconds=seconds, first_token_seconds=ttft, cost=cost
        )
    regenerated = Replay.objects.create(
        round=world["round"], model=world["second"], target_turns="regenerate"
    )
    # The item scored again, wrong, later: its latest answer counts, once.
    ReplayAnswer.objects.create(replay=regenerated, example=world["item"], picked=0, correct=False)
    ReplayAnswer.objects.create(replay=regenerated, example=world["one"], status="failed", error="boom")
    figures = replay_figures(world["task"])
    second = figures[world["second"].pk]
    assert (second.answers, second.failed) == (4 + 1, 1)
    assert second.tokens_per_second == pytest.approx((10 + 30 + 20) / (2.0 + 4.0 + 2.0))  # 7.5
    assert second.first_token_seconds == pytest.approx(0.4)  # median of 0.2, 0.6, 0.4
    assert second.cost_per_thousand == Decimal("2.000")  # (0.003 + 0.001) / 2 x 1000
    assert second.mc_accuracy_by_round == {1: 0.0} and second.mc_items_by_round == {1: 1}
    assert set(figures) == {world["second"].pk}  # the target was not replayed
