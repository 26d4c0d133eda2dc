"""Uncertainty mode (tasks/uncertainty.py; docs/domain.md, "Uncertainty mode"): the config's rules, the
measures against hand-worked values and scipy, the server's decision when an example is stored, the live
confidence (page and API), and unanchored validation by the validator's own label or span."""

from __future__ import annotations

import copy
import math

import pytest
from django.core.exceptions import ValidationError
from scipy.stats import entropy as scipy_entropy

from annotation.goal import goal_met_q
from annotation.models import Example
from annotation.services import create_example
from tasks.builtin_configs import HATE_SPEECH_CONFIG, QA_CONFIG, RED_TEAM_CONFIG
from tasks.config import validate_config
from tasks.models import Task
from tasks.uncertainty import UncertaintyGoal, normalised_entropy, top_probability
from tests.factories.accounts import UserFactory
from tests.factories.models_registry import make_stand_in
from tests.factories.tasks import open_round
from tests.helpers.fakes import probability_predict
from validation import selectors as validation_selectors
from validation import services as validation_services

pytestmark = pytest.mark.django_db


def _with_uncertainty(config: dict, measure: str, threshold) -> dict:
    config = copy.deepcopy(config)
    config["uncertainty"] = {"measure": measure, "threshold": threshold}
    return config


def _messages(config) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        validate_config(config)
    return raised.value.messages


# --- the config --------------------------------------------------------------------------------------


def test_a_threshold_between_one_over_k_and_one_is_accepted():
    validate_config(_with_uncertainty(HATE_SPEECH_CONFIG, "top_probability", 0.6))
    validate_config(_with_uncertainty(HATE_SPEECH_CONFIG, "entropy", 0.9))
    validate_config(_with_uncertainty(QA_CONFIG, "top_probability", 0.3))


@pytest.mark.parametrize("threshold", [0.5, 0.2, 1, 1.5, 0, -0.1])
def test_a_top_probability_threshold_the_model_can_never_fall_under_is_refused(threshold):
    """Two labels: the top probability is at least 0.5, so 0.5 and below could never be met; 1 and
    above would be met by every example."""
    (message,) = _messages(_with_uncertainty(HATE_SPEECH_CONFIG, "top_probability", threshold))
    assert message == (
        "config['uncertainty']: a top_probability threshold for 2 labels must lie between 1/2 = 0.5 "
        f"(the least a top probability can be) and 1, both excluded; got {threshold:g}."
    )


@pytest.mark.parametrize("threshold", [0, 1, 2])
def test_an_entropy_threshold_outside_zero_one_is_refused(threshold):
    (message,) = _messages(_with_uncertainty(HATE_SPEECH_CONFIG, "entropy", threshold))
    assert "normalised entropy threshold must lie between 0 and 1" in message


def test_entropy_on_a_span_task_and_uncertainty_on_a_generative_one_are_refused():
    (span,) = _messages(_with_uncertainty(QA_CONFIG, "entropy", 0.5))
    assert span.startswith("config['uncertainty']: entropy applies to label targets")
    generative = _messages(_with_uncertainty(RED_TEAM_CONFIG, "top_probability", 0.6))
    assert any("uncertainty mode is for label (multiclass) and span" in m for m in generative)


def test_an_unknown_measure_or_a_missing_threshold_is_refused():
    config = copy.deepcopy(HATE_SPEECH_CONFIG)
    config["uncertainty"] = {"measure": "margin", "threshold": 0.6}
    assert any("'margin' is not one of" in m for m in _messages(config))
    config["uncertainty"] = {"measure": "entropy"}
    assert any("'threshold' is a required property" in m for m in _messages(config))


# --- the measures ------------------------------------------------------------------------------------


def test_the_measures_against_hand_worked_values_and_scipy():
    output = {"label": "a", "probabilities": {"a": 0.7, "b": 0.2, "c": 0.1}}
    assert top_probability(output) == 0.7
    # -(0.7 ln 0.7 + 0.2 ln 0.2 + 0.1 ln 0.1) = 0.801819 nats; / ln 3 = 1.098612 -> 0.729847
    assert normalised_entropy(output) == pytest.approx(0.729847, abs=1e-6)
    assert normalised_entropy(output) == pytest.approx(scipy_entropy([0.7, 0.2, 0.1], base=3), rel=1e-12)
    assert normalised_entropy({"probabilities": {"a": 1.0, "b": 0.0}}) == 0.0
    assert normalised_entropy({"probabilities": {"a": 0.5, "b": 0.5}}) == pytest.approx(1.0)
    assert top_probability({"answer": "Ada", "answer_start": 3, "score": 0.42}) == 0.42
    assert top_probability({"error": "x"}) is None and normalised_entropy({"answer": "x"}) is None
    assert top_probability({"probabilities": {"a": math.nan, "b": 0.3}}) == 0.3


def test_the_goal_decides_on_the_side_of_the_threshold_its_measure_says():
    under = UncertaintyGoal("top_probability", 0.6)
    assert under.unsure({"probabilities": {"a": 0.59, "b": 0.41}}) is True
    assert under.unsure({"probabilities": {"a": 0.6, "b": 0.4}}) is False  # strictly under
    over = UncertaintyGoal("entropy", 0.9)
    # H(0.65, 0.35) / ln 2 = 0.934068 > 0.9; H(0.7, 0.3) / ln 2 = 0.881291 < 0.9
    assert over.unsure({"probabilities": {"a": 0.65, "b": 0.35}}) is True
    assert over.unsure({"probabilities": {"a": 0.7, "b": 0.3}}) is False
    assert under.rule == "top probability under 0.6" and over.rule == "entropy over 0.9"


# --- storing an example ------------------------------------------------------------------------------


@pytest.fixture
def unsure_task(db, monkeypatch):
    from models_registry import inference

    monkeypatch.setattr(inference, "predict", probability_predict)
    task = Task.objects.create(
        slug="hate-unsure",
        name="Hate speech, unsure",
        config=_with_uncertainty(HATE_SPEECH_CONFIG, "top_probability", 0.6),
        validation_quorum=2,
    )
    round_ = open_round(task)
    make_stand_in(task, round_)
    return task


def write(task, user, text, label="hateful"):
    example, _ = create_example(task=task, annotator=user, inputs={"statement": text}, target=label)
    return example


def test_the_server_decides_unsure_when_the_example_is_stored(unsure_task, annotator):
    unsure = write(unsure_task, annotator, "p=0.55 they are all the same")
    sure = write(unsure_task, annotator, "p=0.75 they are all the same")
    assert (unsure.model_unsure, sure.model_unsure) == (True, False)
    # The model agreed with the author both times: neither fooled it.
    assert unsure.model_wrong is False and sure.model_wrong is False
    open_ = validation_selectors.open_examples(unsure_task.current_round)
    assert list(open_) == [unsure]
    assert goal_met_q(unsure_task.cfg) is not None


def test_outside_uncertainty_mode_model_unsure_stays_unset(hate_task, annotator, rule_model):
    example = write(hate_task, annotator, "p=0.55 they are all the same")
    assert example.model_unsure is None


# --- live confidence ---------------------------------------------------------------------------------

CONFIDENCE = "/api/tasks/hate-unsure/confidence/"


def test_the_api_measures_a_draft_and_stores_nothing(api, unsure_task, annotator):
    response = api(annotator).post(CONFIDENCE, {"statement": "p=0.58 a draft"}, format="json")
    assert response.status_code == 200
    assert response.json() == {
        "goal": {
            "measure": "top_probability",
            "measure_name": "top probability",
            "threshold": 0.6,
            "rule": "top probability under 0.6",
        },
        "unsure": True,
        "models": [{"model": "stand-in", "answer": "hateful", "value": 0.58, "unsure": True, "error": ""}],
    }
    assert Example.objects.count() == 0


def test_the_api_refuses_bad_drafts_and_other_modes(api, unsure_task, annotator, hate_task, rule_model):
    client = api(annotator)
    empty = client.post(CONFIDENCE, {"statement": "   "}, format="json")
    assert empty.status_code == 400 and "statement" in empty.json()
    unknown = client.post(CONFIDENCE, {"statement": "x", "label": "hateful"}, format="json")
    assert unknown.status_code == 400
    other = client.post("/api/tasks/hate-speech/confidence/", {"statement": "x"}, format="json")
    assert other.status_code == 400
    assert "not in uncertainty mode" in str(other.json())


def test_the_api_refuses_blocked_writers_and_the_signed_out(api, unsure_task, blocked, client):
    assert api(blocked).post(CONFIDENCE, {"statement": "p=0.58 x"}, format="json").status_code == 403
    assert client.post(CONFIDENCE, {"statement": "p=0.58 x"}).status_code in (401, 403)


def test_probes_are_throttled_per_person(api, unsure_task, annotator, settings, client, password):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "confidence_probe": "2/min",
        },
    }
    codes = [
        api(annotator).post(CONFIDENCE, {"statement": "p=0.58 x"}, format="json").status_code
        for _ in range(3)
    ]
    assert codes == [200, 200, 429]
    client.login(username=annotator.username, password=password)
    page = client.post("/tasks/hate-unsure/create/confidence/", {"statement": "p=0.58 x"})
    assert page.status_code == 429 and int(page["Retry-After"]) >= 1


def test_the_page_endpoint_answers_the_script(client, unsure_task, annotator, password):
    client.login(username=annotator.username, password=password)
    answer = client.post("/tasks/hate-unsure/create/confidence/", {"statement": "p=0.7 a draft"})
    assert answer.status_code == 200
    assert answer.json()["unsure"] is False and answer.json()["models"][0]["value"] == 0.7
    bad = client.post("/tasks/hate-unsure/create/confidence/", {"statement": "\u0000"})
    assert bad.status_code == 400 and bad.json()["errors"]
    page = client.get("/tasks/hate-unsure/create/")
    assert b"Your goal: make the model unsure" in page.content
    assert b"top probability under 0.6" in page.content and b"confidence.js" in page.content


def test_the_outcome_says_whether_the_model_was_unsure(client, unsure_task, annotator, password):
    client.login(username=annotator.username, password=password)
    unsure = write(unsure_task, annotator, "p=0.55 they are all the same")
    sure = write(unsure_task, annotator, "p=0.8 they are all the same")
    text = client.get(f"/examples/{unsure.pk}/").content.decode()
    assert "You made the model unsure!" in text and "top probability: <strong>0.550</strong> (unsure)" in text
    assert "Waiting for validation" in text
    text = client.get(f"/examples/{sure.pk}/").content.decode()
    assert "The model was sure." in text
    # The session tally counts the goal of the mode (both examples were written outside the page here).
    import uuid

    sent = {"statement": "p=0.5 more", "label": "hateful", "client_token": str(uuid.uuid4())}
    assert client.post("/tasks/hate-unsure/create/", sent).status_code == 302
    assert (
        "1 of 1 made the model unsure in this session."
        in client.get("/tasks/hate-unsure/create/").content.decode()
    )
    assert "only examples that make the model unsure are validated" in text


# --- validation, unanchored --------------------------------------------------------------------------


@pytest.fixture
def served(unsure_task, annotator, validator):
    """An unsure example its author labelled hateful, served to ``validator``."""
    example = write(unsure_task, annotator, "p=0.55 they are all the same")
    assert validation_services.next_example(round_=unsure_task.current_round, validator=validator) == example
    return example


def test_the_validator_is_served_neither_the_authors_label_nor_the_model(api, served, validator):
    body = api(validator).get("/api/tasks/hate-unsure/validations/next/").json()
    example = body["example"]
    assert example["id"] == served.pk
    assert example["target"] is None and example["model_wrong"] is None and example["model_outputs"] is None
    assert example["explanation"] is None


def test_the_validators_own_label_gives_the_verdict(api, served, validator, password):
    agree = api(validator).post(
        f"/api/examples/{served.pk}/validations/", {"given_target": "hateful"}, format="json"
    )
    assert agree.status_code == 201
    # The verdict (and a corrected label) would say whether they agreed with the author: withheld.
    assert agree.json()["verdict"] is None and agree.json()["corrected_label"] is None
    stored = served.validations.get()
    assert (stored.verdict, stored.given_target, stored.corrected_label) == ("correct", "hateful", "")
    second = UserFactory(username="v2", password=password)
    validation_services.next_example(round_=served.round, validator=second)
    disagree = validation_services.submit_validation(
        example=served, validator=second, verdict="correct", given_target="not-hateful"
    )
    assert (disagree.validation.verdict, disagree.validation.corrected_label) == ("incorrect", "not-hateful")
    assert disagree.settled is False  # quorum 2: one correct, one incorrect


def test_two_validators_agreeing_with_the_author_settle_it(served, validator, password):
    second = UserFactory(username="v2", password=password)
    validation_services.submit_validation(
        example=served, validator=validator, verdict="", given_target="hateful"
    )
    validation_services.next_example(round_=served.round, validator=second)
    outcome = validation_services.submit_validation(
        example=served, validator=second, verdict="incorrect", given_target="hateful"
    )
    assert outcome.settled and outcome.status == Example.Status.VALIDATED_CORRECT


def test_a_missing_or_unknown_label_is_refused_and_nothing_stored(api, served, validator):
    client = api(validator)
    none = client.post(f"/api/examples/{served.pk}/validations/", {}, format="json")
    assert none.status_code == 400
    empty = client.post(f"/api/examples/{served.pk}/validations/", {}, format="json")
    assert empty.status_code == 400 and empty.json() == {"given_target": ["Give the label you judge right."]}
    missing = client.post(f"/api/examples/{served.pk}/validations/", {"verdict": "correct"}, format="json")
    assert missing.status_code == 400 and missing.json()["given_target"] == [
        "Give the label you judge right."
    ]
    unknown = client.post(
        f"/api/examples/{served.pk}/validations/", {"given_target": "spam 🌈"}, format="json"
    )
    assert unknown.status_code == 400 and "Choose one of: hateful, not-hateful." in str(unknown.json())
    assert served.validations.count() == 0
    flag = client.post(f"/api/examples/{served.pk}/validations/", {"verdict": "flagged"}, format="json")
    assert flag.status_code == 201 and served.validations.get().given_target is None


def test_a_given_target_outside_uncertainty_mode_is_refused(api, validator, fooling, hate_task):
    validation_services.next_example(round_=hate_task.current_round, validator=validator)
    response = api(validator).post(
        f"/api/examples/{fooling.pk}/validations/",
        {"verdict": "correct", "given_target": "hateful"},
        format="json",
    )
    assert response.status_code == 400 and "uncertainty mode" in str(response.json())
    assert fooling.validations.count() == 0


def test_the_validate_page_asks_for_the_label_without_showing_the_authors(
    client, served, validator, password
):
    client.login(username=validator.username, password=password)
    page = client.get("/tasks/hate-unsure/validate/").content.decode()
    assert "Which label is right?" in page and "The author's intended" not in page
    assert 'name="given_target"' in page and "Show the model's answer" not in page
    client.post(
        "/tasks/hate-unsure/validate/",
        {"example": served.pk, "verdict": "correct", "given_target": "not-hateful", "round": 1},
    )
    stored = served.validations.get()
    assert (stored.verdict, stored.given_target) == ("incorrect", "not-hateful")


@pytest.fixture
def fooling(hate_task, annotator, rule_model):
    example, _ = create_example(
        task=hate_task,
        annotator=annotator,
        inputs={"statement": "they should go back home"},
        target="hateful",
    )
    return example


# --- span tasks --------------------------------------------------------------------------------------

PASSAGE = "Ada Lovelace wrote the first program in 1843 for the Analytical Engine."


def span_predict(model, inputs: list[dict]) -> list[dict]:
    return [{"answer": "Ada Lovelace", "answer_start": 0, "score": 0.31} for _ in inputs]


@pytest.fixture
def unsure_qa(db, monkeypatch):
    from models_registry import inference
    from tests.factories.tasks import ContextFactory

    monkeypatch.setattr(inference, "predict", span_predict)
    task = Task.objects.create(
        slug="qa-unsure", name="QA, unsure", config=_with_uncertainty(QA_CONFIG, "top_probability", 0.4),
        validation_quorum=1,
    )  # fmt: skip
    round_ = open_round(task)
    make_stand_in(task, round_)
    context = ContextFactory(round=round_, data={"title": "Ada", "context": PASSAGE})
    return task, context


def test_a_span_example_is_unsure_by_its_best_spans_probability_and_validated_by_f1(
    unsure_qa, annotator, validator
):
    task, context = unsure_qa
    example, _ = create_example(
        task=task, annotator=annotator, inputs={"question": "Who wrote the first program?"},
        target={"answer": "Ada Lovelace", "answer_start": 0}, context=context,
    )  # fmt: skip
    assert example.model_unsure is True  # 0.31 < 0.4
    validation_services.next_example(round_=task.current_round, validator=validator)
    with pytest.raises(validation_services.VerdictError) as raised:
        validation_services.submit_validation(
            example=example, validator=validator, verdict="", given_target="Charles Babbage"
        )
    assert raised.value.errors["given_target"]  # not in the passage
    # "Lovelace" against "Ada Lovelace": F1 = 2 * (1 * 0.5) / 1.5 = 0.667 >= 0.4, agrees.
    outcome = validation_services.submit_validation(
        example=example, validator=validator, verdict="", given_target="Lovelace"
    )
    assert outcome.validation.verdict == "correct" and outcome.settled
    assert outcome.validation.given_target == {"answer": "Lovelace", "answer_start": 4}


# --- the round's statistics, page, API, export and release card --------------------------------------


@pytest.fixture
def round_written(unsure_task, annotator, password):
    """Round 1: the annotator writes 0.55 (unsure, then validated) and 0.8 (sure); a second person 0.58
    (unsure, pending), 0.95 (sure) and 0.52 (unsure, retracted: left out)."""
    from annotation.services import retract_example, settle_example

    other = UserFactory(username="other", password=password)
    validated = write(unsure_task, annotator, "p=0.55 one")
    write(unsure_task, annotator, "p=0.8 two")
    write(unsure_task, other, "p=0.58 three")
    write(unsure_task, other, "p=0.95 four")
    retracted = write(unsure_task, other, "p=0.52 five")
    retract_example(example=retracted, user=other)
    assert settle_example(validated.pk, Example.Status.VALIDATED_CORRECT)
    return unsure_task


def test_the_rounds_figures_by_hand(round_written):
    from tasks.uncertainty_stats import uncertainty_stats

    (stats,) = uncertainty_stats(round_written).values()
    assert (stats.examples, stats.unsure, stats.validated_unsure) == (4, 2, 1)
    assert stats.unsure_rate == 0.5 and stats.validated_unsure_rate == 0.25
    # 0.55 and 0.58 in [0.5, 0.6), 0.8 in [0.8, 0.9), 0.95 in [0.9, 1].
    assert stats.histogram == (0, 0, 0, 0, 0, 2, 0, 0, 1, 1)
    assert stats.validated.people == 2 and stats.validated.interval is None  # fewer than 5 people


def test_a_task_not_in_uncertainty_mode_has_no_such_figures(hate_task):
    from tasks.uncertainty_stats import uncertainty_stats

    assert uncertainty_stats(hate_task) == {}


def test_the_task_page_draws_the_histogram_with_the_threshold(client, round_written):
    from tasks.charts import histogram_chart

    page = client.get("/tasks/hate-unsure/").content.decode()
    assert "Examples that made the model unsure" in page and "top probability under 0.6" in page
    assert 'class="chart histogram"' in page and 'class="threshold"' in page
    chart = histogram_chart((0, 0, 0, 0, 0, 2, 0, 0, 1, 1), threshold=0.6, width=480)
    # x of v = LEFT + v * (480 - LEFT - RIGHT) = 48 + v * 416; the tallest column reaches the top (2).
    assert chart.threshold_x == pytest.approx(48 + 0.6 * 416)
    assert chart.columns[5].height == pytest.approx(220 - 28 - 44) and chart.columns[8].count == 1


def test_the_round_api_gives_the_figures(api, round_written, annotator):
    body = api(annotator).get("/api/tasks/hate-unsure/rounds/1/").json()
    figures = body["statistics"]["uncertainty"]
    assert figures["examples"] == 4 and figures["unsure"] == 2 and figures["validated_unsure"] == 1
    assert figures["histogram"] == [0, 0, 0, 0, 0, 2, 0, 0, 1, 1] and figures["people"] == 2
    assert figures["validated_unsure_interval"] is None


def test_the_export_and_the_release_card_name_the_mode(round_written):
    from annotation.exports import iter_records
    from cycle.releases.services import dataset_card

    records = list(iter_records(round_written))
    assert {r["mode"] for r in records} == {"uncertainty"}
    assert {r["goal"] for r in records} == {"top probability under 0.6"}
    assert sorted(r["model_unsure"] for r in records) == [False, False, True, True, True]
    info = {
        "licence": "",
        "round": 1,
        "version": 1,
        "counts": {"total": 1, "duplicates": {"groups": 0, "rows": 0, "across_splits": 0}},
        "files": ["train.jsonl"],
        "task": "hate-unsure",
        "created_at": "2026-12-07",
        "export_format_version": 1,
    }
    card = dataset_card(info, round_written)
    assert "## Uncertainty mode" in card and "**top probability under 0.6**" in card
