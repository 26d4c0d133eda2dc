"""The arena's ranking (docs/benchmarking.md, "Arena"): Bradley-Terry over the votes that count, checked
against ``core.pairwise.rank`` on the same votes; held and blocked voters left out and counted; the fit
cached until a vote, hold or model changes it; the pairs drawn by ``draw_pair`` (from the operating
system's source unless a test seeds it), never a model against itself; the public ranking page and its API.

Nothing is generated here: the models' answers are stored (``stored_battle``), or the chat call is
replaced by a canned answer (``canned``), so the flows run in a second."""

from __future__ import annotations

import random
import secrets
import uuid

import pytest

from core.pairwise import Vote, rank
from engine.runtime.generative import Generation
from generative_bench.arena import selectors, services
from generative_bench.models import Battle
from models_registry.models import RegisteredModel
from tasks import qualification
from tasks.models import Task, TaskWorker
from tests.factories.accounts import UserFactory
from tests.factories.arena import add_model, stored_battle
from tests.factories.red_team import make_red_team_round
from tests.helpers.api import client_for
from tests.helpers.stub_streams import StubStream

RANKING = "/tasks/red-team/arena/ranking/"


@pytest.fixture
def task(db, tmp_path):
    """A red-teaming task whose round target is a local model ("target", never run here)."""
    round_ = make_red_team_round(tmp_path, slug="red-team")
    RegisteredModel.objects.filter(task=round_.task).update(name="target", is_published=True)
    return round_.task


def _remote(task: Task, name: str, **fields) -> RegisteredModel:
    """A ready chat-endpoint model; never contacted (the tests that start battles use ``canned``)."""
    return RegisteredModel.objects.create(
        task=task,
        name=name,
        source=RegisteredModel.Source.CHAT_ENDPOINT,
        endpoint_url="http://127.0.0.1:9/v1",
        chat_model_name=name,
        status="ready",
        is_published=True,
        **fields,
    )


@pytest.fixture
def canned(monkeypatch):
    """``chat_stream`` answers at once with "answer from #<model id>" (the pairing and storing are real; not
    the model's name, which the anonymity check would catch)."""

    class Stream(StubStream):
        def __init__(self, model):
            self.model = model

        def answer(self):
            return Generation(
                text=f"answer from #{self.model.pk}", finish_reason="stop", model=self.model.name, decoding={}
            )

    monkeypatch.setattr(services, "chat_stream", lambda model, messages: Stream(model))


def _vote(task, voter, a, b, outcome) -> Battle:
    battle = stored_battle(task, voter, a, b)
    stored, recorded = services.vote(battle=battle, voter=voter, vote=outcome)
    assert recorded
    return stored


def test_three_people_vote_on_30_pairs_and_the_ranking_is_bradley_terry_with_intervals(task, canned):
    """Three voters, ten battles each, through ``start_battle`` (pairs by ``draw_pair``) and ``vote``.
    Each voter prefers the model whose name comes first in the alphabet ("alpha" > "bravo" > "charlie"),
    except that anything against "target" is a tie for the first voter and "both bad" for the others."""
    target = RegisteredModel.objects.get(task=task, name="target")
    target.source = RegisteredModel.Source.CHAT_ENDPOINT  # so the context check loads no folder
    target.save(update_fields=["source"])
    models = [target, _remote(task, "alpha"), _remote(task, "bravo"), _remote(task, "charlie")]
    voters = [UserFactory(username=f"voter{i}") for i in range(3)]
    rng = random.Random(7)
    cast: list[Vote] = []
    for turn in range(30):
        voter = voters[turn % 3]
        battle = services.start_battle(task=task, voter=voter, prompt=f"Prompt {turn} ✨", rng=rng)
        a, b = battle.model_a, battle.model_b
        assert a != b and battle.status == "ready"
        assert (battle.answer_a, battle.answer_b) == (f"answer from #{a.pk}", f"answer from #{b.pk}")
        if "target" in (a.name, b.name):
            outcome = "tie" if voter == voters[0] else "both_bad"
        else:
            outcome = "a" if a.name < b.name else "b"
        services.vote(battle=battle, voter=voter, vote=outcome)
        cast.append(Vote(a.pk, b.pk, outcome))

    ids = sorted(m.pk for m in models)
    expected = rank(cast, models=ids, samples=200, seed=0)
    ranking = selectors.arena_ranking(task)
    assert ranking.n_votes == 30 and ranking.samples == 200
    assert ranking.order() == expected.order()
    assert ranking.scores == pytest.approx(expected.scores)
    assert ranking.intervals == expected.intervals
    assert ranking.votes_per_pair == expected.votes_per_pair
    # The draw served every pair of the four models (6 pairs), and no pair hogged the votes (a pair's
    # chance falls as 1 / (1 + its votes)).
    assert len(ranking.votes_per_pair) == 6 and sum(ranking.votes_per_pair.values()) == 30
    assert max(ranking.votes_per_pair.values()) - min(ranking.votes_per_pair.values()) <= 2
    by_name = {m.pk: m.name for m in models}
    assert [by_name[k] for k in ranking.order()][0] == "alpha"
    assert [by_name[k] for k in ranking.order()].index("bravo") < [by_name[k] for k in ranking.order()].index(
        "charlie"
    )
    for key, (low, high) in ranking.intervals.items():
        assert low <= ranking.scores[key] <= high

    table = selectors.ranking_table(task, None, selectors.arena_summary(task))
    assert [r["model_id"] for r in table["rows"]] == expected.order()
    assert [r["votes"] for r in table["rows"]] == [expected.votes_of(k) for k in expected.order()]
    assert table["rows"][0]["rank"] == 1
    assert sum(sum(n for n in row["votes"] if n) for row in table["pairs"]) == 2 * 30


def test_never_a_model_against_itself(task, canned):
    target = RegisteredModel.objects.get(task=task, name="target")
    target.source = RegisteredModel.Source.CHAT_ENDPOINT
    target.save(update_fields=["source"])
    other = _remote(task, "other")
    voter = UserFactory()
    sides = []
    for turn in range(12):
        battle = services.start_battle(task=task, voter=voter, prompt=f"p{turn}", rng=random.Random(turn))
        assert {battle.model_a, battle.model_b} == {target, other}
        sides.append(battle.model_a == target)
        services.vote(battle=battle, voter=voter, vote="tie")
    assert any(sides) and not all(sides)  # each model was shown as A sometimes: the sides are drawn


def test_the_pair_is_drawn_from_the_operating_systems_source_unless_a_test_seeds_it(
    task, canned, monkeypatch
):
    target = RegisteredModel.objects.get(task=task, name="target")
    target.source = RegisteredModel.Source.CHAT_ENDPOINT
    target.save(update_fields=["source"])
    for name in ("alpha", "bravo"):
        _remote(task, name)
    used = []
    real = services.draw_pair

    def spy(ranking, models, *, rng):
        used.append(rng)
        return real(ranking, models, rng=rng)

    monkeypatch.setattr(services, "draw_pair", spy)
    voter = UserFactory()
    services.start_battle(task=task, voter=voter, prompt="unseeded")
    assert isinstance(used[-1], secrets.SystemRandom)  # not a seeded generator anyone could replay
    # A seeded generator gives the same pair and sides again.
    first = services.start_battle(task=task, voter=voter, prompt="seeded", rng=random.Random(11))
    again = services.start_battle(task=task, voter=voter, prompt="seeded again", rng=random.Random(11))
    assert (first.model_a, first.model_b) == (again.model_a, again.model_b)


def test_held_and_blocked_voters_are_left_out_and_counted(task):
    x, y, z = (add_model(task, n) for n in ("x-model", "y-model", "z-model"))
    fair, held, listed, banned = (UserFactory(username=n) for n in ("fair", "held", "listed", "banned"))
    kept = [
        _vote(task, fair, x, y, "a"),
        _vote(task, fair, y, z, "a"),
        _vote(task, fair, x, z, "tie"),
        _vote(task, fair, z, x, "b"),
    ]
    _vote(task, held, z, x, "a")
    _vote(task, held, z, y, "a")
    _vote(task, held, z, x, "a")
    _vote(task, listed, y, x, "a")
    _vote(task, banned, z, y, "both_bad")
    everyone = selectors.votes_of(task)
    assert len(everyone.votes) == 9 and everyone.left_out == {"blocked": 0, "held": 0, "not_anonymous": 0}

    qualification.hold_for_review(task=task, user=held, reason="gold accuracy 40%")
    qualification.set_listing(task=task, user=listed, listing=TaskWorker.Listing.BLOCKED)
    banned.is_blocked = True
    banned.save(update_fields=["is_blocked"])
    counted = selectors.votes_of(task)
    assert counted.votes == [Vote(b.model_a_id, b.model_b_id, b.vote) for b in kept]
    assert counted.left_out == {"blocked": 2, "held": 3, "not_anonymous": 0} and counted.n_left_out == 5

    models = sorted(RegisteredModel.objects.filter(task=task).values_list("pk", flat=True))
    summary = selectors.arena_summary(task)
    assert summary.ranking == rank(counted.votes, models=models)
    assert summary.left_out == {"blocked": 2, "held": 3, "not_anonymous": 0}
    client = client_for(None)
    body = client.get("/api/tasks/red-team/arena/ranking/").json()
    assert (body["n_votes"], body["n_left_out"], body["left_out"]) == (
        4,
        5,
        {"blocked": 2, "held": 3, "not_anonymous": 0},
    )
    page = client.get(RANKING).content.decode()
    assert (
        "4 votes counted. 5 left out: 3 from people held for review on this task, 2 from blocked accounts."
        in page
    )
    for name in ("held", "listed", "banned"):  # counts only, no names
        assert f">{name}<" not in page and f'"{name}"' not in str(body)

    qualification.release_hold(task=task, user=held)
    assert selectors.arena_summary(task).left_out == {"blocked": 2, "held": 0, "not_anonymous": 0}
    assert selectors.arena_ranking(task).n_votes == 7


def test_the_fit_is_cached_until_a_vote_a_hold_or_a_model_changes(task, monkeypatch):
    x, y = add_model(task, "x-model"), add_model(task, "y-model")
    voter = UserFactory()
    _vote(task, voter, x, y, "a")
    fits = []
    real_rank = selectors.rank
    monkeypatch.setattr(selectors, "rank", lambda *a, **k: fits.append(1) or real_rank(*a, **k))
    first = selectors.arena_ranking(task)
    assert selectors.arena_ranking(task) == first and len(fits) == 1
    _vote(task, voter, y, x, "tie")
    assert selectors.arena_ranking(task).n_votes == 2 and len(fits) == 2
    qualification.hold_for_review(task=task, user=voter, reason="review")
    assert selectors.arena_ranking(task).n_votes == 0 and len(fits) == 3
    z = add_model(task, "z-model")
    assert z.pk in selectors.arena_ranking(task).scores and len(fits) == 4
    selectors.arena_ranking(task)
    assert len(fits) == 4


def test_a_model_without_votes_is_listed_at_1000_without_an_interval(task, client):
    x, y = add_model(task, "x-model"), add_model(task, "y-model")
    quiet = add_model(task, "quiet-model")
    voter = UserFactory()
    for outcome in ("a", "a", "a", "b"):
        _vote(task, voter, x, y, outcome)
    table = selectors.ranking_table(task, None, selectors.arena_summary(task))
    rows = {r["name"]: r for r in table["rows"]}
    # Three wins to one, with the prior's one pseudo-tie: strengths 3.5 : 1.5, so x - y =
    # 400 log10(3.5 / 1.5) = 147.2 points, centred on 1000 (core/pairwise.py).
    assert rows["x-model"]["score"] - rows["y-model"]["score"] == pytest.approx(147.19, abs=0.01)
    assert rows["x-model"]["score"] + rows["y-model"]["score"] == pytest.approx(2000)
    assert (rows["x-model"]["rank"], rows["y-model"]["rank"]) == (1, 2)
    assert rows["quiet-model"] == {
        "model_id": quiet.pk,
        "name": "quiet-model",
        "rank": None,
        "score": 1000.0,
        "low": None,
        "high": None,
        "votes": 0,
        "fragility": None,
        "style_controlled": None,
        "share": 0.0,
        "target_share": rows["quiet-model"]["target_share"],
        "withdrawn": False,
        "votes_since_change": 0,
        "provisional": True,
    }
    # Exposure: x and y took part in all 4 votes; the pair rule's targets sum to 2 (two models a battle),
    # and a model without votes (counted at twice the widest interval, with no vote on its pairs) is
    # aimed at more than one with votes.
    assert (rows["x-model"]["share"], rows["y-model"]["share"]) == (1.0, 1.0)
    assert sum(r["target_share"] for r in rows.values()) == pytest.approx(2.0)
    assert rows["quiet-model"]["target_share"] > rows["x-model"]["target_share"]
    assert rows["target"]["votes"] == 0
    # Fragility (core/fragility.py, worked by hand in tests/core/test_fragility.py): y's rank changes when
    # 2 of x's 3 wins go (1.5 : 1.5, level); x's when all 3 go (0.5 : 1.5).
    assert rows["x-model"]["fragility"] == {"removals": 3, "direction": "down"}
    assert rows["y-model"]["fragility"] == {"removals": 2, "direction": "up"}
    assert (table["fragility_searched"], table["fragility_max_removals"]) == (True, 20)
    # Every answer is two words, no markdown: style never varies, so the style-controlled scores are the
    # plain ones and no feature has a coefficient.
    assert rows["x-model"]["style_controlled"]["score"] == pytest.approx(rows["x-model"]["score"], abs=1e-4)
    assert [c["coefficient"] for c in table["style_coefficients"]] == [None] * 4
    page = client.get(RANKING).content.decode()
    assert '<caption id="arena-ranking-caption">Models by Bradley-Terry score, best first</caption>' in page
    assert '<th scope="row">quiet-model</th>' in page and "no votes yet" in page
    assert "4 votes counted. No vote left out." in page
    assert '<strong>3</strong> <span class="muted">(a model below passes it)</span>' in page
    assert '<strong>2</strong> <span class="muted">(it passes the model above)</span>' in page


def test_the_ranking_page_lists_what_the_viewer_may_see(task, client, owner):
    x, y = add_model(task, "x-model"), add_model(task, "y-model")
    secret = add_model(task, "secret-model")
    RegisteredModel.objects.filter(pk=secret.pk).update(is_published=False)
    masked = add_model(task, "masked-model", is_anonymous=True)
    voter = UserFactory()
    _vote(task, voter, x, secret, "b")
    _vote(task, voter, masked, y, "a")
    _vote(task, voter, x, y, "a")
    public = client.get(RANKING).content.decode()
    assert "secret-model" not in public and "masked-model" not in public
    assert "Anonymous model 1" in public
    assert "1 unpublished model also takes part and is not listed." in public
    # The rule the page states is the draw's, not the former choice of the widest interval.
    assert "two models drawn at random" in public and "widest interval" not in public
    # The pair matrix, row x-model: against itself "–", y-model 1; row y-model: x-model 1, Anonymous 1.
    table = selectors.ranking_table(task, None, selectors.arena_summary(task))
    names = [row["name"] for row in table["pairs"]]
    by_row = {row["name"]: dict(zip(names, row["votes"], strict=True)) for row in table["pairs"]}
    assert by_row["x-model"] == {"x-model": None, "y-model": 1, "Anonymous model 1": 0, "target": 0}
    assert by_row["y-model"]["Anonymous model 1"] == 1
    task.owners.add(owner)
    client.force_login(owner)
    own = client.get(RANKING).content.decode()
    assert "secret-model" in own and "masked-model" in own and "not listed" not in own


def test_the_names_shown_after_a_vote_follow_the_visibility_rule(task, annotator):
    x = add_model(task, "x-model")
    secret = add_model(task, "secret-model")
    RegisteredModel.objects.filter(pk=secret.pk).update(is_published=False)
    secret.refresh_from_db()
    masked = add_model(task, "masked-model", is_anonymous=True)
    names = selectors.shown_names(annotator, task, [x, secret, masked])
    assert names == {x.pk: "x-model", secret.pk: "Unpublished model 1", masked.pk: "Anonymous model 1"}
    battle = stored_battle(task, annotator, secret, masked)
    client = client_for(annotator)
    voted = client.post(f"/api/battles/{battle.pk}/vote/", {"vote": "a"}, format="json").json()
    assert voted["models"] == {"a": "Unpublished model 1", "b": "Anonymous model 1"}
    assert "secret-model" not in str(voted) and "masked-model" not in str(voted)


def test_a_round_prompt_is_picked_among_those_the_voter_has_not_had(task, annotator, validator, canned):
    from tests.factories.arena import settled_conversation

    target = RegisteredModel.objects.get(task=task, name="target")
    target.source = RegisteredModel.Source.CHAT_ENDPOINT
    target.save(update_fields=["source"])
    _remote(task, "other")
    round_ = task.current_round
    first = settled_conversation(round_, validator, first="First?")
    second = settled_conversation(round_, validator, first="Second?", passage=first.context)
    settled_conversation(round_, validator, first="Pending?", status="pending", passage=first.context)
    settled_conversation(round_, validator, first="Gone?", is_retracted=True, passage=first.context)
    assert selectors.rounds_with_prompts(task) == [(1, 2)]
    picked = []
    for _ in range(2):
        example = selectors.pick_round_prompt(task, 1, annotator, rng=random.Random(0))
        picked.append(example)
        services.start_battle(task=task, voter=annotator, source_example=example, client_token=uuid.uuid4())
    assert sorted(e.pk for e in picked) == sorted([first.pk, second.pk])
    assert selectors.pick_round_prompt(task, 1, annotator) in (first, second)  # all had: any again
    assert selectors.pick_round_prompt(task, 2, annotator) is None


def test_the_style_controlled_ranking_shows_a_taste_for_long_answers(task):
    """x's answers are long (40 words) and win; y's are short (2 words): length then explains x's wins as
    well as x itself does, so the length coefficient is positive and x's lead shrinks once it is
    controlled for."""
    x, y = add_model(task, "x-model"), add_model(task, "y-model")
    z = add_model(task, "z-model")
    voter = UserFactory()
    long, short = " ".join(["word"] * 40), "Short one."
    for n in range(12):
        battle = stored_battle(task, voter, x, y, answer_a=long, answer_b=short)
        services.vote(battle=battle, voter=voter, vote="a" if n < 9 else "b")
    for n in range(12):  # z and y, both short: an even contest
        battle = stored_battle(task, voter, z, y, answer_a=short, answer_b="Also short.")
        services.vote(battle=battle, voter=voter, vote="a" if n % 2 else "b")
    for n in range(6):  # x short against z: x still ahead
        battle = stored_battle(task, voter, x, z, answer_a="Brief answer.", answer_b=short)
        services.vote(battle=battle, voter=voter, vote="a" if n < 4 else "b")
    table = selectors.ranking_table(task, None, selectors.arena_summary(task))
    rows = {r["name"]: r for r in table["rows"]}
    length = next(c for c in table["style_coefficients"] if c["feature"] == "length")
    assert length["coefficient"] > 0
    plain_lead = rows["x-model"]["score"] - rows["y-model"]["score"]
    style_lead = rows["x-model"]["style_controlled"]["score"] - rows["y-model"]["style_controlled"]["score"]
    assert style_lead < plain_lead
    body = client_for(None).get("/api/tasks/red-team/arena/ranking/").json()
    assert [c["feature"] for c in body["style_coefficients"]] == ["length", "headers", "lists", "bold"]
    assert body["rows"][0]["style_controlled"]["score"] is not None


def test_a_withdrawn_model_stays_listed_and_marked(task, client):
    x, y = add_model(task, "x-model"), add_model(task, "y-model")
    voter = UserFactory()
    for outcome in ("a", "b", "a"):
        _vote(task, voter, x, y, outcome)
    RegisteredModel.objects.filter(pk=y.pk).update(status="failed")  # no longer served
    rows = {r["name"]: r for r in selectors.ranking_table(task, None, selectors.arena_summary(task))["rows"]}
    assert rows["y-model"]["withdrawn"] is True and rows["y-model"]["target_share"] is None
    assert rows["y-model"]["votes"] == 3 and rows["x-model"]["withdrawn"] is False
    page = client.get(RANKING).content.decode()
    assert 'y-model <span class="muted">(withdrawn: no longer served)</span>' in page


def test_a_rating_is_provisional_until_enough_votes_since_its_answers_changed(task, client):
    """With arena_min_votes 3: x and y have 4 votes each, not provisional. x's settings change (a new
    system prompt): its 4 earlier votes no longer count toward it, so it is provisional again, with 0
    of 3; publishing y (not a change of its answers) leaves it as it was."""
    task.config["red_team"]["arena_min_votes"] = 3
    task.save(update_fields=["config"])
    x, y = add_model(task, "x-model"), add_model(task, "y-model")
    voter = UserFactory()
    for outcome in ("a", "a", "a", "b"):
        _vote(task, voter, x, y, outcome)
    rows = {r["name"]: r for r in selectors.ranking_table(task, None, selectors.arena_summary(task))["rows"]}
    assert (rows["x-model"]["votes_since_change"], rows["x-model"]["provisional"]) == (4, False)
    x = RegisteredModel.objects.get(pk=x.pk)
    x.generation = {**x.generation, "system_prompt": "Be brief."}
    x.save()
    y = RegisteredModel.objects.get(pk=y.pk)
    y.is_published = not y.is_published
    y.save()
    y.refresh_from_db()
    assert y.answers_changed_at is None
    y.is_published = True
    y.save()
    table = selectors.ranking_table(task, None, selectors.arena_summary(task))
    rows = {r["name"]: r for r in table["rows"]}
    assert (rows["x-model"]["votes_since_change"], rows["x-model"]["provisional"]) == (0, True)
    assert (rows["y-model"]["votes_since_change"], rows["y-model"]["provisional"]) == (4, False)
    assert table["min_votes"] == 3
    page = client.get(RANKING).content.decode()
    assert "provisional (0 of 3 votes since its last change)" in page
