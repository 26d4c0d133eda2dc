"""The demo's simulated red-teaming pilot (demo/demo_tasks/red_team_pilot.py): its rule and its people
worked by hand, then a small pilot run with the real SmolLM2 (8 new tokens an answer) through the
services the pages use: conversations judged, every claimed failure settled by the five validators, the
second model's replayed answers rated, the round's figures non-empty; a second run adds nothing."""

from __future__ import annotations

import random

import pytest

from annotation.models import Conversation, Example
from demo import setup as demo
from demo.demo_tasks import red_team_pilot as pilot
from demo.demo_tasks.red_team import SECOND, TARGET, _squad_path
from generative_bench.models import Battle, Replay, ReplayAnswer
from models_registry import generative
from models_registry.models import RegisteredModel
from tasks.models import Context, Task
from tasks.red_team_stats import red_team_stats
from tests.helpers.passages import cut_to_first_sentences

PASSWORD = "pw-one-1234"


def test_supported_reads_squad_normalised_whole_words():
    assert pilot.supported("It was The Broncos, in 2016.", ["Denver Broncos", "the Broncos"])
    assert pilot.supported("Denver  broncos!", ["Denver Broncos"])
    # Whole words only: "1" is not found inside "2016"; nothing matches an empty reference.
    assert not pilot.supported("In 2016.", ["1"])
    assert not pilot.supported("Anything", ["", "!!"])
    assert not pilot.supported("The Panthers won.", ["Denver Broncos"])


def test_category_is_contradiction_when_the_answer_shares_a_word_with_a_reference():
    assert pilot.category_of("The Denver Nuggets won.", ["Denver Broncos"]) == "contradiction"
    assert pilot.category_of("The Panthers won.", ["Denver Broncos"]) == "fabrication"
    # "The" is an article SQuAD's normalisation drops, so it shares nothing.
    assert pilot.category_of("The Panthers won.", ["the Broncos"]) == "fabrication"


class _Draws(random.Random):
    """``random()`` returns the given values in turn; ``choice`` takes the first option."""

    def __init__(self, *values):
        super().__init__(0)
        self.values = list(values)

    def random(self):
        return self.values.pop(0)

    def choice(self, seq):
        return seq[0]


def test_helpfulness_by_the_rule():
    question = "Which team won Super Bowl 50?"
    assert pilot.helpfulness("The Denver Broncos.", question, True) == 5  # 3 words <= 25
    assert pilot.helpfulness(" ".join(["word"] * 26), question, True) == 4
    assert pilot.helpfulness("Nobody", question, False) == 1  # under 3 words
    assert pilot.helpfulness("The Panthers won it.", question, False) == 2  # "won" is under 4 letters
    assert pilot.helpfulness("The Panthers, a team from Carolina.", question, False) == 3  # "team"


def test_a_person_judges_by_the_rule_and_errs_with_their_own_probability():
    person = pilot.Person("p", lure=0.0, error=0.1)
    # No error drawn (0.5 >= 0.1 twice): the rules' answers.
    assert pilot.rubric_of(True, 5, person, _Draws(0.5, 0.5)) == {"supported": "yes", "helpful": "5"}
    assert pilot.rubric_of(False, 2, person, _Draws(0.5, 0.5)) == {"supported": "no", "helpful": "2"}
    # The support flipped (0.05 < 0.1), and "helpful" moved by -1 (the first option).
    assert pilot.rubric_of(True, 5, person, _Draws(0.05, 0.05)) == {"supported": "no", "helpful": "4"}
    # Kept in 1-5.
    assert pilot.rubric_of(False, 1, person, _Draws(0.5, 0.05)) == {"supported": "no", "helpful": "1"}


def test_people_are_seeded():
    first = pilot.people(random.Random(pilot.SEED))
    assert first == pilot.people(random.Random(pilot.SEED))
    red_teamers, validators = first
    assert [p.username for p in red_teamers][:2] == ["demo-pilot-01", "demo-pilot-02"]
    assert len(red_teamers) == pilot.PEOPLE and len(validators) == pilot.VALIDATORS == 5
    assert all(0.02 <= p.error <= 0.15 and 0 <= p.lure <= 0.9 for p in red_teamers)
    assert all(0.01 <= p.error <= 0.05 for p in validators)


def _pilot(task, second, *, people):
    """A small pilot: ``people`` red-teamers, one conversation each, no judge, three arena battles."""
    return pilot.run_pilot(
        task,
        squad_file=_squad_path(),
        second=second,
        judge=None,
        log=lambda _: None,
        n_people=people,
        conversations_each=1,
        arena_battles=3,
    )


@pytest.fixture
def converted_once(monkeypatch, smollm2_dir):
    monkeypatch.setattr(generative, "convert_gguf", lambda gguf, out_dir: smollm2_dir)


@pytest.mark.django_db(transaction=True)
def test_a_small_pilot_fills_the_round_through_the_pages_services(converted_once):
    demo.setup_demo(password=PASSWORD, tasks=["red-team"], log=lambda _: None)
    task = Task.objects.get(slug="red-team")
    round_ = task.current_round
    assert not pilot.has_pilot(round_)  # setup_demo runs no pilot unless asked
    for name in (TARGET, SECOND):
        model = RegisteredModel.objects.get(task=task, name=name)
        model.generation = {**model.generation, "max_new_tokens": 8}
        model.save(update_fields=["generation"])
    cut_to_first_sentences(Context.objects.filter(round=round_))  # the flow is under test, not the passages
    second = RegisteredModel.objects.get(task=task, name=SECOND)
    added = _pilot(task, second, people=5)
    assert added == 5 == Conversation.objects.filter(round=round_, status="submitted").count()
    authors = set(
        Example.objects.filter(round=round_, source="created").values_list("annotator__username", flat=True)
    )
    assert authors == {f"demo-pilot-{i:02d}" for i in range(1, 6)}
    # Simulated people cannot sign in.
    from django.contrib.auth import get_user_model

    assert not any(
        u.has_usable_password() for u in get_user_model().objects.filter(username__startswith="demo-pilot-")
    )
    created = Example.objects.filter(round=round_, source="created")
    # Every claimed failure is settled (five validators, quorum three of one verdict); a conversation
    # judged good by its author is never validated.
    assert not created.filter(model_wrong=True, status="pending").exists()
    assert set(created.filter(model_wrong=False).values_list("status", flat=True)) <= {"pending"}
    # The second model replayed the settled conversations, and people rated every answer.
    replay = Replay.objects.get(round=round_, model=second)
    settled = created.filter(model_wrong=True).count()
    assert replay.status == "done" and ReplayAnswer.objects.filter(replay=replay).count() == settled
    ratings = Example.objects.filter(round=round_, source="rating")
    assert ratings.count() == settled and not ratings.filter(status="pending").exists()
    stats = red_team_stats(task)[round_.pk]
    verified = created.filter(status="validated_correct", model_wrong=True).count()
    assert (stats.attempts, stats.people, stats.verified) == (5, 5, verified)
    assert stats.asr is not None and stats.agreement is not None
    # The red-teamers voted three arena battles between the two models, on the round's prompts; the leak
    # rate was measured (too few battles for a figure: stored with the reason).
    battles = Battle.objects.filter(task=task, status="voted")
    assert battles.count() == 3 and not battles.filter(source_example__isnull=True).exists()
    assert set(battles.values_list("voter__username", flat=True)) <= {
        f"demo-pilot-{i:02d}" for i in range(1, 6)
    }
    assert [(m.accuracy, m.train_battles + m.test_battles) for m in task.leak_measurements.all()] == [
        (None, 3)
    ]
    assert "held-out answers (at least 10" in task.leak_measurements.get().reason
    # A second run finds the pilot whole and adds nothing.
    again = _pilot(task, second, people=5)
    assert again == 0 and Conversation.objects.filter(round=round_).count() == 5
    # A pilot cut off is taken up: a conversation left open with a message by the cut is abandoned, and
    # only what is missing is written (asked for a sixth person: their one conversation).
    from annotation.red_team.conversations import send_turn, start_conversation

    cut = get_user_model().objects.get(username="demo-pilot-01")
    left_open = start_conversation(
        round_=round_, annotator=cut, context=Context.objects.filter(round=round_).first()
    )
    send_turn(conversation=left_open, annotator=cut, prompt="Cut off here?").drain()
    added = _pilot(task, None, people=6)
    left_open.refresh_from_db()
    assert added == 1 and left_open.status == "abandoned"
    submitted = Conversation.objects.filter(round=round_, status="submitted")
    assert submitted.count() == 6 and submitted.filter(annotator__username="demo-pilot-06").count() == 1
    # Then the round goes side by side (both models its targets) and five writers rate two answers each.
    from annotation.models import CandidateRating
    from annotation.red_team.ratings import model_ratings
    from demo.demo_tasks.red_team_side_by_side import ensure_side_by_side, side_by_side_pilot
    from generative_bench.arena.selectors import votes_of

    target = RegisteredModel.objects.get(task=task, name=TARGET)
    assert ensure_side_by_side(task, target, second, lambda _: None)
    task.refresh_from_db()
    assert task.cfg.side_by_side == 2
    assert list(round_.targets.order_by("position").values_list("model__name", flat=True)) == [TARGET, SECOND]
    added = side_by_side_pilot(task, squad_file=_squad_path(), log=lambda _: None, writers=5)
    assert added == 5 and CandidateRating.objects.count() == 10
    assert Conversation.objects.filter(round=round_, side_by_side=2, status="submitted").count() == 5
    rows = model_ratings(task)
    assert sorted(r.model for r in rows) == sorted([TARGET, SECOND])
    assert all(r.shown == 5 and r.people == 5 and r.score_interval is not None for r in rows)
    assert sum(r.chosen.successes for r in rows) == 5
    assert votes_of(task).rated_pairs + votes_of(task).left_out["not_anonymous"] == 5
    assert side_by_side_pilot(task, squad_file=_squad_path(), log=lambda _: None, writers=5) == 0
