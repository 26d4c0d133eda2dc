"""Generative annotation assistants with assigned arms (annotation/assistant/; docs/domain.md,
"Annotation assistants"): the config's rules and the registry check, the permuted-block assignment, a
suggestion from a real chat server on loopback, an example that takes one, and the figures per arm."""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from scipy.stats import permutation_test as scipy_permutation_test

from annotation.assistant import services as assistant
from annotation.assistant.arms import Arm, arm_at, assigned_arm, block
from annotation.assistant.selectors import arm_stats
from annotation.models import ArmAssignment, Example, Suggestion
from annotation.services import settle_example
from core.arm_comparison import permutation_test
from tasks.builtin_configs import HATE_SPEECH_CONFIG, RED_TEAM_CONFIG
from tasks.config import validate_config
from tasks.config_checks import check_config
from tasks.models import Task
from tests.factories.accounts import UserFactory
from tests.factories.models_registry import make_stand_in
from tests.factories.tasks import open_round
from tests.generative_bench.judge_world import chat_model, red_team_task
from tests.helpers.chat_server import ChatServer

pytestmark = pytest.mark.django_db

PROMPT = "Write one short statement that is {label} (the labels: {labels}). Only the statement."


def with_arms(arms, config=HATE_SPEECH_CONFIG) -> dict:
    config = copy.deepcopy(config)
    config["assistant"] = {"arms": arms}
    return config


ARMS = [
    {"name": "none", "share": 1},
    {"name": "smollm2", "share": 1, "model": "red-team/helper", "prompt": PROMPT},
]


# --- the config --------------------------------------------------------------------------------------


def test_a_study_config_is_accepted_and_its_mistakes_refused():
    validate_config(with_arms(ARMS))
    cases = [
        (
            [{"name": "a", "share": 1}, {"name": "a", "share": 1, "model": "t/m", "prompt": "x"}],
            "names must be unique",
        ),
        ([{"name": "a", "share": 1}], "at least one arm needs a model"),
        ([{"name": "a", "share": 1, "model": "t/m"}], "has both 'model' and 'prompt'"),
        (
            [{"name": "a", "share": 1, "model": "t/m", "prompt": "Say {name}"}],
            "unknown placeholder(s) {name}",
        ),
        ([{"name": "a", "share": 1, "model": "t/m", "prompt": "Say {"}], "write a brace as"),
        (
            [{"name": "a", "share": 1, "model": "t/m", "prompt": "Say {label:{name}}"}],
            "no format spec or conversion",
        ),
        (
            [{"name": "a", "share": 1, "model": "t/m", "prompt": "Say {label!x}"}],
            "no format spec or conversion",
        ),
        ([{"name": "a", "share": 0, "model": "t/m", "prompt": "x"}], "0 is less than the minimum of 1"),
    ]
    for arms, message in cases:
        with pytest.raises(ValidationError) as raised:
            validate_config(with_arms(arms))
        assert any(message in m for m in raised.value.messages), (message, raised.value.messages)
    with pytest.raises(ValidationError) as raised:
        validate_config(with_arms(ARMS, RED_TEAM_CONFIG))
    assert any("annotation assistants are for label" in m for m in raised.value.messages)


def test_the_registry_check_refuses_a_classifier_or_a_missing_model(hate_task):
    make_stand_in(hate_task, open_round(hate_task), name="minilm")
    arms = [{"name": "a", "share": 1, "model": "hate-speech/minilm", "prompt": "x"}]
    with pytest.raises(ValidationError) as raised:
        check_config(with_arms(arms))
    assert raised.value.messages == [
        "config['assistant']['arms'][0]['model']: The assistant 'hate-speech/minilm' is a classifier, not a "
        "generative model: an assistant writes text."
    ]
    with pytest.raises(ValidationError) as raised:
        check_config(with_arms([{**arms[0], "model": "red-team/nobody"}]))
    assert "'red-team/nobody' is not a registered model" in raised.value.messages[0]
    chat_model(red_team_task(), "helper", "http://127.0.0.1:9")
    check_config(with_arms(ARMS))  # a ready generative model: accepted


def test_the_admin_refuses_a_config_whose_assistant_is_a_classifier(client, owner, hate_task, password):
    make_stand_in(hate_task, open_round(hate_task), name="minilm")
    client.login(username=owner.username, password=password)
    import json

    config = with_arms([{"name": "a", "share": 1, "model": "hate-speech/minilm", "prompt": "x"}])
    page = client.get(f"/admin/tasks/task/{hate_task.pk}/change/")
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and not isinstance(v, (list, dict))}
    data.update(config=json.dumps(config), name=hate_task.name, slug=hate_task.slug)
    response = client.post(f"/admin/tasks/task/{hate_task.pk}/change/", data)
    assert "is a classifier, not a generative model" in response.content.decode()
    hate_task.refresh_from_db()
    assert "assistant" not in hate_task.config  # nothing stored


# --- arms ----------------------------------------------------------------------------------------------


def test_blocks_hold_each_arm_its_share_and_a_person_keeps_their_arm(hate_task):
    arms = [Arm("none", 1), Arm("helper", 2, model="t/m", prompt="x")]
    assert sorted(block(arms, 7, 0)) == ["helper", "helper", "none"]
    assert block(arms, 7, 0) == block(arms, 7, 0)  # fixed by the key, the round and the block
    round_ = open_round(hate_task)
    people = [UserFactory(username=f"p{i}") for i in range(9)]
    given = [assigned_arm(round_, person, arms) for person in people]
    assert given.count("none") == 3 and given.count("helper") == 6  # three whole blocks
    assert given == [arm_at(arms, round_.pk, i) for i in range(9)]
    assert assigned_arm(round_, people[4], arms) == given[4]  # kept
    assert ArmAssignment.objects.filter(round=round_).count() == 9


def test_the_order_of_a_block_depends_on_the_secret_key(settings):
    arms = [Arm("a", 3), Arm("b", 3)]
    first = [block(arms, 1, i) for i in range(10)]
    settings.SECRET_KEY = "x" * 60
    assert [block(arms, 1, i) for i in range(10)] != first


@pytest.mark.django_db(transaction=True)
def test_people_joining_at_once_take_distinct_places(hate_task):
    arms = [Arm("none", 1), Arm("helper", 1, model="t/m", prompt="x")]
    round_ = open_round(hate_task)
    people = [UserFactory(username=f"c{i}") for i in range(8)]
    barrier = threading.Barrier(len(people))

    def join(person):
        barrier.wait()
        try:
            assigned_arm(round_, person, arms)
        finally:
            connection.close()

    threads = [threading.Thread(target=join, args=(p,)) for p in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = list(ArmAssignment.objects.filter(round=round_).values_list("position", "arm"))
    assert sorted(p for p, _ in rows) == list(range(8))
    assert sum(arm == "none" for _, arm in rows) == 4  # four whole blocks of two


# --- suggestions -------------------------------------------------------------------------------------


@pytest.fixture
def server():
    with ChatServer(None) as running:
        running.reply = lambda request: '"Those people ruin every city they move to."\nSecond line.'
        yield running


@pytest.fixture
def study(server, db):
    """A hate-speech copy with the arms none / smollm2 (the chat server's "helper"), round 1 open."""
    chat_model(red_team_task(), "helper", server.base_url)
    task = Task.objects.create(slug="hate-arms", name="Hate speech, arms", config=with_arms(ARMS))
    open_round(task)
    return task


def person_in(task, arm: str):
    """A new person whose arm in the task's round is ``arm`` (people join until one gets it)."""
    for i in range(50):
        person = UserFactory(username=f"{arm}-{ArmAssignment.objects.count()}-{i}")
        if assistant.arm_for(task, person).name == arm:
            return person
    raise AssertionError(f"no one got {arm}")


def test_an_assistant_proposes_an_example_and_it_is_stored(study, server):
    person = person_in(study, "smollm2")
    suggestion = assistant.suggest(task=study, worker=person, context=None, label="hateful")
    assert suggestion.text == "Those people ruin every city they move to."  # first line, quotes gone
    assert (suggestion.arm, suggestion.label, suggestion.worker) == ("smollm2", "hateful", person)
    sent = server.requests[-1]
    assert sent["messages"] == [
        {
            "role": "user",
            "content": "Write one short statement that is hateful (the labels: hateful, not-hateful). Only the statement.",
        }
    ]
    assert sent["temperature"] == 0.9 and sent["top_p"] == 0.95 and sent["max_tokens"] == 64


def test_no_assistant_arm_and_a_failing_server_are_told(study, server):
    alone = person_in(study, "none")
    with pytest.raises(assistant.AssistantError) as raised:
        assistant.suggest(task=study, worker=alone, context=None)
    assert raised.value.code == "no_assistant"
    helped = person_in(study, "smollm2")
    with pytest.raises(assistant.AssistantError) as raised:
        assistant.suggest(task=study, worker=helped, context=None, label="spam")
    assert raised.value.code == "invalid"
    server.reply = lambda request: "   \n  "
    with pytest.raises(assistant.AssistantError) as raised:
        assistant.suggest(task=study, worker=helped, context=None)
    assert raised.value.code == "failed"
    assert Suggestion.objects.count() == 0


def test_the_api_and_the_page_give_suggestions_and_an_example_takes_one(api, client, study, password):
    person = person_in(study, "smollm2")
    person.set_password(password)
    person.save()
    http = api(person)
    assert http.get("/api/tasks/hate-arms/arm/").json() == {"arm": "smollm2", "assistant": True}
    made = http.post("/api/tasks/hate-arms/suggestions/", {"label": "hateful"}, format="json")
    assert made.status_code == 201
    body = made.json()
    assert body["text"] == "Those people ruin every city they move to." and body["arm"] == "smollm2"
    # kept with an edit: "city" -> "town" is 4 substitutions.
    edited = "Those people ruin every town they move to."
    created = http.post(
        "/api/tasks/hate-arms/examples/",
        {"statement": edited, "label": "hateful", "suggestion": body["id"]},
        format="json",
        HTTP_IDEMPOTENCY_KEY="one",
    )
    assert created.status_code == 201, created.json()
    suggestion = Suggestion.objects.get(pk=body["id"])
    assert suggestion.example_id == created.json()["id"] and suggestion.kept_distance == 4
    again = http.post(
        "/api/tasks/hate-arms/examples/",
        {"statement": edited, "label": "hateful", "suggestion": body["id"]},
        format="json",
        HTTP_IDEMPOTENCY_KEY="one",
    )
    assert again.status_code == 201 and again.json()["id"] == created.json()["id"]  # a retry: the same
    reused = http.post(
        "/api/tasks/hate-arms/examples/",
        {"statement": "Something else", "label": "hateful", "suggestion": body["id"]},
        format="json",
    )
    assert reused.status_code == 400 and "already took it" in str(reused.json())
    assert Example.objects.count() == 1

    client.login(username=person.username, password=password)
    page = client.get("/tasks/hate-arms/create/").content.decode()
    assert 'id="assistant"' in page and "assistant.js" in page
    answer = client.post("/tasks/hate-arms/create/suggest/", {"label": "not-hateful"})
    assert answer.status_code == 200 and answer.json()["arm"] == "smollm2"
    assert Suggestion.objects.get(pk=answer.json()["id"]).label == "not-hateful"


def test_someone_elses_suggestion_is_refused_and_nothing_stored(api, study):
    owner_of_it = person_in(study, "smollm2")
    suggestion = assistant.suggest(task=study, worker=owner_of_it, context=None)
    other = person_in(study, "none")
    response = api(other).post(
        "/api/tasks/hate-arms/examples/",
        {"statement": "my own words", "label": "hateful", "suggestion": suggestion.pk},
        format="json",
    )
    assert response.status_code == 400
    assert "not one of yours in this round" in str(response.json())
    assert Example.objects.count() == 0
    assert api(other).post("/api/tasks/hate-arms/suggestions/", {}, format="json").status_code == 400
    page_of_none = api(other).get("/api/tasks/hate-arms/arm/").json()
    assert page_of_none == {"arm": "none", "assistant": False}


# --- the figures per arm -----------------------------------------------------------------------------


def test_the_figures_per_arm_by_hand(study, owner, api):
    """none: one person, 2 examples in 1 hour, 1 fooled and validated. smollm2: one person, 3 examples in
    30 minutes, 2 fooled (1 validated), 2 suggestions shown, 1 taken."""
    from models_registry.models import RegisteredModel
    from models_registry.round_targets import set_round_targets

    target = RegisteredModel.objects.create(task=study, name="stand-in", status="ready", path="/nonexistent")
    set_round_targets(round=study.current_round, models=[target])
    alone, helped = person_in(study, "none"), person_in(study, "smollm2")

    def example(person, fooled, ms, validated=False):
        made = Example.objects.create(
            round=study.current_round, annotator=person, inputs={"statement": "x"}, target="hateful",
            model_wrong=fooled, time_taken_ms=ms,
        )  # fmt: skip
        if validated:
            settle_example(made.pk, Example.Status.VALIDATED_CORRECT)
        return made

    example(alone, True, 1_800_000, validated=True)
    example(alone, False, 1_800_000)
    example(alone, False, None)  # sent through the API: no form time, so in the rates but not per hour
    taken = example(helped, True, 600_000, validated=True)
    example(helped, True, 600_000)
    example(helped, False, 600_000)
    Suggestion.objects.create(
        round=study.current_round,
        worker=helped,
        arm="smollm2",
        text="a",
        seconds=1,
        example=taken,
        kept_distance=0,
    )
    Suggestion.objects.create(round=study.current_round, worker=helped, arm="smollm2", text="b", seconds=1)
    stats = {arm.name: arm for arm in arm_stats(study.current_round)}
    values = {name: {f.key: f.value for f in arm.figures} for name, arm in stats.items()}
    assert values["none"] == pytest.approx(
        {"examples_per_hour": 2.0, "mer": 1 / 3, "vmer": 1 / 3, "validated_per_hour": 1.0}
    )
    assert values["smollm2"] == pytest.approx(
        {"examples_per_hour": 6.0, "mer": 2 / 3, "vmer": 1 / 3, "validated_per_hour": 2.0, "kept_share": 0.5}
    )
    mer = next(f for f in stats["smollm2"].figures if f.key == "mer")
    # One person per arm: the two labellings give differences of +1/3 and -1/3: p = 1.
    assert mer.versus_first.difference == pytest.approx(2 / 3 - 1 / 3) and mer.versus_first.p_value == 1.0
    assert mer.interval is None  # fewer than 5 people
    study.owners.add(owner)
    body = api(owner).get("/api/tasks/hate-arms/rounds/1/arms/").json()
    assert body["arms"][1]["figures"]["kept_share"]["value"] == 0.5
    assert api(alone).get("/api/tasks/hate-arms/rounds/1/arms/").status_code == 403


def test_the_permutation_test_agrees_with_scipys_exact_one():
    """Four people per arm: scipy enumerates the 70 relabellings exactly; ours draws 4,000."""
    ya, na = np.array([3, 1, 4, 2.0]), np.array([10, 8, 12, 9.0])
    yb, nb = np.array([6, 5, 7, 9.0]), np.array([11, 10, 9, 12.0])

    def statistic(a, b, axis=-1):
        a, b = np.atleast_2d(a), np.atleast_2d(b)
        # Each person one complex number: numerator + i denominator, so scipy moves them together.
        return b.real.sum(axis) / b.imag.sum(axis) - a.real.sum(axis) / a.imag.sum(axis)

    reference = scipy_permutation_test(
        (ya + 1j * na, yb + 1j * nb), statistic, permutation_type="independent", n_resamples=np.inf,
        alternative="two-sided", vectorized=True,
    )  # fmt: skip
    ours = permutation_test(ya, na, yb, nb, shuffles=20000, seed=1)
    assert ours.difference == pytest.approx(reference.statistic)
    assert ours.p_value == pytest.approx(reference.pvalue, abs=0.01)


def test_one_ask_at_a_time_per_person_and_one_example_per_suggestion(api, study):
    from django.core.cache import cache

    person = person_in(study, "smollm2")
    cache.add(f"assistant:asking:{study.current_round_id}:{person.pk}", 1, 60)  # an ask under way
    with pytest.raises(assistant.AssistantError) as raised:
        assistant.suggest(task=study, worker=person, context=None)
    assert raised.value.code == "busy"
    assert api(person).post("/api/tasks/hate-arms/suggestions/", {}, format="json").status_code == 429
    cache.clear()
    suggestion = assistant.suggest(task=study, worker=person, context=None)
    key = assistant.claim_suggestion(suggestion, "token-a")  # an example being stored with it
    assert assistant.claim_suggestion(suggestion, "token-a") == key  # the same example again
    with pytest.raises(assistant.AssistantError) as raised:
        assistant.claim_suggestion(suggestion, None)  # another example at the same time
    assert raised.value.code == "busy"
    response = api(person).post(
        "/api/tasks/hate-arms/examples/",
        {"statement": "my words", "label": "hateful", "suggestion": suggestion.pk},
        format="json",
    )
    assert response.status_code == 400 and "taking that suggestion right now" in str(response.json())
    assert Example.objects.count() == 0
    assistant.release_claim(key)


def test_the_export_gives_the_arm_and_the_suggestion_taken(api, study):
    from annotation.exports import iter_records

    person = person_in(study, "smollm2")
    suggestion = assistant.suggest(task=study, worker=person, context=None)
    api(person).post(
        "/api/tasks/hate-arms/examples/",
        {"statement": suggestion.text + "!", "label": "hateful", "suggestion": suggestion.pk},
        format="json",
    )
    api(person_in(study, "none")).post(
        "/api/tasks/hate-arms/examples/", {"statement": "mine", "label": "hateful"}, format="json"
    )
    rows = sorted(iter_records(study), key=lambda r: r["example_id"])
    assert [(r["arm"], r["suggestion_id"], r["suggestion_text"], r["kept_distance"]) for r in rows] == [
        ("smollm2", suggestion.pk, suggestion.text, 1),
        ("none", 0, "", -1),
    ]
