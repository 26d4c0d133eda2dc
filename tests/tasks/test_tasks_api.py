"""Tasks, rounds (statistics checked by hand) and contexts/next."""

from __future__ import annotations

import pytest

from annotation.models import Example
from tasks.models import Context, Task
from tasks.services import close_round, ensure_round, set_current_round
from tests.factories.annotation import make_example

pytestmark = pytest.mark.django_db

CTX_CONFIG = {
    "context_fields": [{"name": "premise", "type": "string"}],
    "input_fields": [{"name": "hypothesis", "type": "string"}],
    "target_field": {
        "name": "label",
        "type": "multiclass",
        "labels": ["entailment", "neutral", "contradiction"],
    },
    "model_input_fields": ["premise", "hypothesis"],
    "model_wrong_rule": {"type": "exact_match"},
    "perf_metric": "accuracy",
}


@pytest.fixture
def ctx_task():
    task = Task.objects.create(slug="nli-mini", name="NLI mini", config=CTX_CONFIG)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    return task


def test_task_list_and_detail(api, hate_round, annotator):
    listed = api(None).get("/api/tasks/").json()
    assert listed["count"] == 1 and listed["next"] is None and listed["previous"] is None
    assert listed["results"] == [
        {
            "slug": "hate-speech",
            "name": "Hate speech",
            "labels": ["hateful", "not-hateful"],
            "current_round": 1,
            "collecting": True,
            "quorum": 3,
        }
    ]
    detail = api(annotator).get("/api/tasks/hate-speech/").json()
    assert detail["input_fields"][0]["name"] == "statement"
    assert detail["target_field"]["name"] == "label"
    assert detail["context_fields"] == []
    assert detail["config"]["model_wrong_rule"] == {"type": "exact_match"}
    assert detail["is_owner"] is False


def test_task_detail_says_owner_and_closed_round(api, hate_round, owner):
    close_round(round_=hate_round)
    detail = api(owner).get("/api/tasks/hate-speech/").json()
    assert detail["is_owner"] is True
    assert detail["collecting"] is False and detail["current_round"] == 1


def test_round_statistics_match_hand_counts(api, hate_task, hate_round, annotator, validator):
    """A fooling pending, B fooling settled correct, C not fooling, D fooling retracted, E imported.

    examples = A, B, C = 3, all scored; fooling = A, B = 2; validated_fooling = B = 1; MER = 2/3; vMER = 1/3;
    retracted = 1 (D); imported = 1 (E); flagged = 0; median time of A, B, C = 20 s (10, 20, 40 s).
    """
    make_example(hate_round, annotator, model_wrong=True, time_taken_ms=10_000)
    make_example(
        hate_round, annotator, model_wrong=True, status=Example.Status.VALIDATED_CORRECT, time_taken_ms=20_000
    )
    make_example(hate_round, validator, model_wrong=False, time_taken_ms=40_000)
    make_example(hate_round, annotator, model_wrong=True, is_retracted=True)
    make_example(
        hate_round, None, model_wrong=None, source=Example.Source.IMPORTED, status="validated_correct"
    )
    ensure_round(task=hate_task, number=2)
    stats = api(None).get("/api/tasks/hate-speech/rounds/1/").json()["statistics"]
    assert stats == {
        "examples": 3,
        "scored": 3,
        "fooling": 2,
        "validated_fooling": 1,
        "mer": pytest.approx(2 / 3),
        "vmer": pytest.approx(1 / 3),
        "unscored": 0,
        "imported": 1,
        "retracted": 1,
        "flagged": 0,
        "median_time_s": 20.0,
        "agreement_alpha": None,  # no verdicts yet
        "cost": None,  # nothing paid through a crowd study (tests/crowd/test_cost_per_round.py)
        "costs": [],
    }
    rounds = api(None).get("/api/tasks/hate-speech/rounds/").json()
    assert [r["number"] for r in rounds["results"]] == [1, 2]
    assert rounds["results"][0]["statistics"] == stats
    assert rounds["results"][0]["is_current"] is True and rounds["results"][1]["is_current"] is False
    assert rounds["results"][1]["statistics"]["examples"] == 0
    assert rounds["results"][1]["statistics"]["mer"] is None
    assert api(None).get("/api/tasks/hate-speech/rounds/?is_closed=true").json()["count"] == 0


def test_task_list_refuses_a_filter_it_does_not_have(api, hate_round):
    response = api(None).get("/api/tasks/", {"slug": "nli"})
    assert response.status_code == 400
    assert response.json() == {"slug": ["Unknown parameter; this list takes: page, page_size, format."]}
    assert api(None).get("/api/tasks/", {"page": "1", "page_size": "5"}).status_code == 200


def test_round_list_filters_refuse_what_they_do_not_understand(api, hate_task, hate_round):
    ensure_round(task=hate_task, number=2)
    url = "/api/tasks/hate-speech/rounds/"
    numbers = lambda response: [r["number"] for r in response.json()["results"]]  # noqa: E731
    assert numbers(api(None).get(url, {"number": "2"})) == [2]
    assert numbers(api(None).get(url, {"number": "2", "page_size": "1", "page": "1"})) == [2]
    digits = "A whole number from 1 to 2147483647, written with the digits 0-9."
    for bad in ("abc", "2.0", "0", "-1", "²", "١", " 2", "2 ", "9" * 5000):
        response = api(None).get(url, {"number": bad})
        assert response.status_code == 400, bad
        assert response.json() == {"number": [digits]}
    response = api(None).get(url, {"numbr": "2"})
    assert response.status_code == 400
    assert response.json() == {
        "numbr": ["Unknown parameter; this list takes: number, is_closed, page, page_size, format."]
    }
    response = api(None).get(url, {"is_closed": "maybe"})
    assert response.status_code == 400 and list(response.json()) == ["is_closed"]


@pytest.mark.parametrize("number", ["0", "-1", "abc", "99999999999999999999999", "1.5", "٣"])
def test_malformed_round_numbers_are_json_404(api, hate_round, number):
    response = api(None).get(f"/api/tasks/hate-speech/rounds/{number}/")
    assert response.status_code == 404
    assert response.json() == {"detail": "No such round."}


def test_next_context_least_used_serves_the_unused_one(api, ctx_task, annotator, validator):
    round_ = ctx_task.current_round
    used = Context.objects.create(task=ctx_task, round=round_, data={"premise": "used"}, tag="a")
    fresh = Context.objects.create(task=ctx_task, round=round_, data={"premise": "fresh ☂ عربى"}, tag="b")
    make_example(round_, validator, inputs={"hypothesis": "h"}, target="neutral", context=used)
    for _ in range(5):
        served = api(annotator).get("/api/tasks/nli-mini/contexts/next/").json()
        assert served == {
            "id": fresh.pk,
            "round": 1,
            "data": {"premise": "fresh ☂ عربى"},
            "tag": "b",
            "metadata": {},
        }
    tagged = api(annotator).get("/api/tasks/nli-mini/contexts/next/?strategy=uniform&tags=a").json()
    assert tagged["id"] == used.pk
    both = api(annotator).get("/api/tasks/nli-mini/contexts/next/?strategy=least_fooled&tags=a,%20b").json()
    assert both["id"] == fresh.pk
    nothing = api(annotator).get("/api/tasks/nli-mini/contexts/next/?tags=zzz")
    assert nothing.status_code == 404 and "No context" in nothing.json()["detail"]


def test_next_context_refuses_unknown_strategy_and_nul(api, ctx_task, annotator):
    bad = api(annotator).get("/api/tasks/nli-mini/contexts/next/?strategy=best")
    assert bad.status_code == 400 and "strategy" in bad.json()
    nul = api(annotator).get("/api/tasks/nli-mini/contexts/next/?tags=a%00b")
    assert nul.status_code == 400 and "tags" in nul.json()


def test_next_context_of_a_closed_round_is_404(api, ctx_task, annotator):
    Context.objects.create(task=ctx_task, round=ctx_task.current_round, data={"premise": "p"})
    close_round(round_=ctx_task.current_round)
    response = api(annotator).get("/api/tasks/nli-mini/contexts/next/")
    assert response.status_code == 404 and "no open round" in response.json()["detail"]
