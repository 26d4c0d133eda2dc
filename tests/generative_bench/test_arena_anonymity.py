"""The arena's anonymity check while serving (docs/benchmarking.md, "Anonymity"): an answer that names a
model is asked again once under the default rule, and a battle whose answer still names one (or any,
under the "mark" rule) is kept, marked not anonymous, its vote counted apart from the ranking. The chat
call is replaced by scripted answers; the pairing, the check and the storing are real."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from engine.runtime.generative import Generation
from generative_bench.arena import selectors, services
from models_registry.models import RegisteredModel
from tests.factories.accounts import UserFactory
from tests.factories.arena import remote_pair_task
from tests.helpers.stub_streams import StubStream


@pytest.fixture
def task(db, tmp_path):
    return remote_pair_task(tmp_path)  # max_turns 3, the default


@pytest.fixture
def script(monkeypatch):
    """``script[name]`` is the list of answers model ``name`` gives, one per call, the last repeated;
    ``calls[name]`` counts its calls."""
    answers: dict[str, list[str]] = {}
    calls: dict[str, int] = defaultdict(int)

    class Stream(StubStream):
        def __init__(self, model):
            self.model = model

        def answer(self):
            said = answers[self.model.name]
            text = said[min(calls[self.model.name], len(said) - 1)]
            calls[self.model.name] += 1
            return Generation(text=text, finish_reason="stop", model=self.model.name, decoding={})

    monkeypatch.setattr(services, "chat_stream", lambda model, messages: Stream(model))
    return answers, calls


def _battle(task, voter, prompt="Tell me about rivers."):
    return services.start_battle(task=task, voter=voter, prompt=prompt, rng=random.Random(1))


def _side(battle, name):
    return "A" if battle.model_a.name == name else "B"


def test_a_named_model_is_asked_again_once_then_the_battle_is_marked(task, script, client):
    answers, calls = script
    answers["alpha"] = ["I'm ALPHA, here to help: rivers flow.", "Rivers flow to the sea."]
    answers["bravo"] = ["As Chat GPT, I can say rivers flow."]
    voter = UserFactory()
    battle = _battle(task, voter)
    assert battle.status == "ready" and (calls["alpha"], calls["bravo"]) == (2, 2)
    assert battle.regenerated == 2
    # alpha's second answer is clean and is the one kept; bravo named ChatGPT twice.
    assert "Rivers flow to the sea." in (battle.answer_a, battle.answer_b)
    assert not battle.anonymous
    assert battle.identity_leak == f"Answer {_side(battle, 'bravo')} named ChatGPT"
    # The vote is taken, and counted apart.
    client.force_login(voter)
    page = client.get(f"/tasks/{task.slug}/arena/battles/{battle.pk}/").content.decode()
    assert "this vote will be counted apart" in page and "As Chat GPT" in page  # the answer itself says it
    voted, recorded = services.vote(battle=battle, voter=voter, vote="a")
    assert recorded
    summary = selectors.arena_summary(task)
    assert summary.ranking.n_votes == 0 and summary.left_out == {"blocked": 0, "held": 0, "not_anonymous": 1}
    page = client.get(f"/tasks/{task.slug}/arena/battles/{battle.pk}/").content.decode()
    assert "This battle was not anonymous. Answer" in page and "it is not in the ranking" in page
    ranking = client.get(f"/tasks/{task.slug}/arena/ranking/").content.decode()
    assert "1 from battles that were not anonymous (an answer named a model)" in ranking
    body = client.get(f"/api/tasks/{task.slug}/arena/ranking/").json()
    assert body["left_out"]["not_anonymous"] == 1 and body["n_votes"] == 0
    assert selectors.voter_checks(task).per_voter == {}  # votes counted apart are not tested either


def test_under_the_mark_rule_nothing_is_asked_again(task, script):
    task.config["red_team"]["arena_on_identity"] = "mark"
    task.save(update_fields=["config"])
    answers, calls = script
    answers["alpha"] = ["Hi, I'm QUOKKA."]
    answers["bravo"] = ["Rivers flow."]
    RegisteredModel.objects.create(task=task, name="Quokka-Chat-7", path="/x", status="failed")
    battle = _battle(task, UserFactory())
    assert (calls["alpha"], calls["bravo"], battle.regenerated) == (1, 1, 0)
    assert not battle.anonymous and battle.identity_leak == f"Answer {_side(battle, 'alpha')} named quokka"


def test_clean_answers_and_names_the_prompt_asked_for_stay_anonymous(task, script):
    answers, calls = script
    answers["alpha"] = ["ChatGPT is a chatbot by OpenAI."]
    answers["bravo"] = ["It is OpenAI's ChatGPT."]
    battle = _battle(task, UserFactory(), prompt="What is ChatGPT, and who made it (OpenAI?)")
    assert battle.anonymous and battle.identity_leak == "" and battle.regenerated == 0
    assert (calls["alpha"], calls["bravo"]) == (1, 1)


def test_the_owners_terms_are_checked_and_bad_terms_refused(task, script):
    from django.core.exceptions import ValidationError

    from tasks.config import validate_config

    task.config["red_team"]["arena_identity_terms"] = ["Acme Assist"]
    task.save(update_fields=["config"])
    answers, _ = script
    answers["alpha"] = ["acme-assist says: rivers flow."]
    answers["bravo"] = ["Rivers flow."]
    battle = _battle(task, UserFactory())
    assert not battle.anonymous and "named Acme Assist" in battle.identity_leak
    for bad in (
        {"arena_on_identity": "drop"},
        {"arena_identity_terms": ["!!"]},
        {"arena_identity_terms": "x"},
    ):
        config = {**task.config, "red_team": {**task.config["red_team"], **bad}}
        with pytest.raises(ValidationError):
            validate_config(config)
    validate_config(task.config)  # the good one passes


def test_the_leak_rate_is_measured_stored_and_shown(task, client):
    """20 voted battles: "alpha" always answers with a pirate's "arr", "bravo" never. The command stores
    the measurement (6 battles held out, their 12 answers all guessed: Wilson on 12, every battle right;
    "arr" among the words that give alpha away), the page and the API show the latest; the owner's button measures again through the job
    queue; anyone else gets a 404."""
    import io

    from django.core.management import call_command

    from generative_bench.models import Battle
    from tests.factories.arena import stored_battle

    alpha, bravo = (RegisteredModel.objects.get(task=task, name=n) for n in ("alpha", "bravo"))
    voter = UserFactory()
    ranking = f"/tasks/{task.slug}/arena/ranking/"
    assert "Leak rate: not measured yet." in client.get(ranking).content.decode()
    call_command("measure_arena_leak", "--task", task.slug, stdout=io.StringIO())
    assert "Leak rate: not measurable yet. Why: no voted battle." in client.get(ranking).content.decode()
    for i in range(20):
        battle = stored_battle(task, voter, alpha, bravo)
        Battle.objects.filter(pk=battle.pk).update(
            answer_a=f"Rivers {i} are long, arr!", answer_b=f"Rivers {i} are long."
        )
        services.vote(battle=battle, voter=voter, vote="tie")
    out = io.StringIO()
    call_command("measure_arena_leak", "--task", task.slug, stdout=out)
    assert (
        "Leak rate: 100.0% (95% 75.8% to 100.0%) of 12 held-out answers (6 battles; trained on 14), 2 models;"
        " chance 50.0%: ABOVE chance" in out.getvalue()
    )
    alpha_words = next(line for line in out.getvalue().splitlines() if line.startswith("  alpha: "))
    assert "arr" in alpha_words.split(": ", 1)[1].split(", ")
    page = client.get(ranking).content.decode()
    assert "tells which of 2 models wrote an answer in <strong>100%</strong>" in page
    assert "The models can be told apart from their text" in page and '<q dir="auto">arr</q>' in page
    assert "Measure the leak rate now" not in page  # not an owner
    body = client.get(f"/api/tasks/{task.slug}/arena/ranking/").json()["leak_rate"]
    assert (body["tested"], body["models"], body["leaks"], body["chance"], body["test_battles"]) == (
        12,
        2,
        True,
        0.5,
        6,
    )
    assert body["top_words"][0]["name"] == "alpha" and "arr" in body["top_words"][0]["words"]
    client.force_login(voter)
    assert client.post(f"/tasks/{task.slug}/arena/ranking/measure-leak/").status_code == 404
    owner = UserFactory()
    task.owners.add(owner)
    client.force_login(owner)
    assert "Measure the leak rate now" in client.get(ranking).content.decode()
    after = client.post(f"/tasks/{task.slug}/arena/ranking/measure-leak/", follow=True).content.decode()
    assert "The leak rate is being measured" in after
    assert task.leak_measurements.count() == 3


def test_a_turn_continuing_a_battle_that_was_not_anonymous_is_not_either(task, script):
    """The sides stay the same turn after turn, so the voter already knows who is who; and a name a model
    said in an earlier answer does not exempt the next (only the user's messages are the prompt)."""
    answers, _ = script
    answers["alpha"] = ["I am ChatGPT."]
    answers["bravo"] = ["Rivers flow."]
    task.config["red_team"]["arena_on_identity"] = "mark"
    task.save(update_fields=["config"])
    voter = UserFactory()
    first = _battle(task, voter)
    assert not first.anonymous
    answers["alpha"] = ["Rivers are long."]
    voted, _ = services.vote(battle=first, voter=voter, vote=_side(first, "alpha").lower(), follow_up="Why?")
    second = voted.continuation
    side = _side(first, "alpha")
    assert not second.anonymous
    assert second.identity_leak == f"The turn it continues was not anonymous: answer {side} named ChatGPT"
    # A fresh battle whose earlier turns (given whole) hold a model's own "ChatGPT": still a leak.
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "I am ChatGPT."},
        {"role": "user", "content": "And now?"},
    ]
    assert services.identity_check("ChatGPT again.", messages, selectors.identity_terms(task)) == ["ChatGPT"]


def test_two_empty_answers_fail_the_battle(task, script):
    answers, _ = script
    answers["alpha"] = ["   "]
    answers["bravo"] = [""]
    battle = _battle(task, UserFactory())
    assert battle.status == "failed" and battle.error.startswith("Both answers were empty")
    answers["alpha"] = ["Something."]
    assert _battle(task, UserFactory(), prompt="Again").status == "ready"  # one empty answer may lose


def test_a_next_message_too_long_for_a_model_is_refused_before_the_vote_and_kept_in_the_box(
    task, script, client, monkeypatch
):
    from models_registry.serving import PromptTooLong

    answers, _ = script
    answers["alpha"] = ["Rivers."]
    answers["bravo"] = ["Water."]
    voter = UserFactory()
    battle = _battle(task, voter)

    def fits(model, messages):
        if len(messages) > 1:
            raise PromptTooLong(10_442, 8_192, 160)

    monkeypatch.setattr(services, "fits", fits)
    client.force_login(voter)
    url = f"/tasks/{task.slug}/arena/battles/{battle.pk}/vote/"
    page = client.post(url, {"vote": "a", "follow_up": "Tell me more 🌊"})
    assert page.status_code == 400
    html = page.content.decode()
    assert "The prompt is too long for the models" in html and ">Tell me more 🌊</textarea>" in html
    battle.refresh_from_db()
    assert battle.status == "ready" and battle.vote == ""  # nothing stored
    spaces = client.post(url, {"vote": "a", "follow_up": "   "}).content.decode()
    assert "Your next message has no visible character" in spaces


def test_the_turns_of_one_conversation_are_one_group_and_cues_read_as_words(task, script):
    from generative_bench.models import LeakMeasurement

    answers, _ = script
    answers["alpha"] = ["One."]
    answers["bravo"] = ["Two."]
    voter = UserFactory()
    first = _battle(task, voter)
    voted, _ = services.vote(battle=first, voter=voter, vote="a", follow_up="More?")
    services.vote(battle=voted.continuation, voter=voter, vote="b")
    groups = {group for group, _, _ in selectors.revealed_answers(task)}
    assert groups == {first.pk}  # both turns under the first turn's id
    LeakMeasurement.objects.create(
        task=task, top_words={str(first.model_a_id): ["length_4", "unfinished", "arr"]}
    )
    words = selectors.latest_leak(task)["top_words"][0]["words"]
    assert words == ["4 to 7 words", "stops mid-sentence", "arr"]
