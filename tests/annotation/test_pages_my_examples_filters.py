"""/me/examples/ filters (task, round, status, fooled or not) as a GET form, the summary line over the
filtered examples, and pagination that keeps the filters."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import Example
from tests.factories.annotation import make_example
from tests.factories.tasks import builtin_task, open_round

URL = reverse("annotation:my_examples")


@pytest.fixture
def mine(annotator, validator, hate_task, hate_round):
    """The annotator's examples (by hand):

    hate-speech round 1: fooled+validated_correct, fooled+pending, not fooled+pending, not scored,
        fooled+retracted;
    hate-speech round 2: fooled+validated_correct, not fooled+validated_incorrect;
    sentiment round 1: not fooled+pending.
    Plus one example by someone else, never listed.
    """
    r2 = open_round(hate_task, 2)
    sentiment_round = open_round(builtin_task("sentiment"))
    made = {
        "r1_fooled_ok": make_example(hate_round, annotator, model_wrong=True, status="validated_correct"),
        "r1_fooled": make_example(hate_round, annotator, model_wrong=True),
        "r1_not": make_example(hate_round, annotator, model_wrong=False),
        "r1_unscored": make_example(hate_round, annotator, model_wrong=None, prediction_status="failed"),
        "r1_retracted": make_example(hate_round, annotator, model_wrong=True, is_retracted=True),
        "r2_fooled_ok": make_example(r2, annotator, model_wrong=True, status="validated_correct"),
        "r2_not_bad": make_example(r2, annotator, model_wrong=False, status="validated_incorrect"),
        "sent_not": make_example(sentiment_round, annotator, model_wrong=False, target="positive"),
    }
    make_example(hate_round, validator, model_wrong=True)
    return made


def _ids(response) -> set[int]:
    return {row["example"].pk for row in response.context["rows"]}


def _get(client, annotator, password, query=None):
    client.login(username=annotator.username, password=password)
    return client.get(URL, query or {})


def test_no_filter_lists_everything_and_summarises_it(client, annotator, password, mine):
    response = _get(client, annotator, password)
    assert _ids(response) == {e.pk for e in mine.values()}
    # Written (not retracted) 7; fooled 3 (r1_fooled_ok, r1_fooled, r2_fooled_ok); scored 6 (all but the
    # unscored one); validated correct 2; MER 3/6 = 50%; 1 retracted apart.
    s = response.context["summary"]
    assert (s["written"], s["fooled"], s["scored"], s["validated"], s["retracted"]) == (7, 3, 6, 2, 1)
    assert s["mer"] == 0.5
    text = response.text
    assert "<strong>7</strong> written" in text and "<strong>3</strong> fooled the model" in text
    assert "<strong>2</strong> validated correct" in text and "<strong>50%</strong>" in text
    assert "(1 retracted, counted in none of these)" in text


def test_task_and_round_narrow_the_list_and_the_summary(client, annotator, password, mine):
    response = _get(client, annotator, password, {"task": "hate-speech", "round": "2"})
    assert _ids(response) == {mine["r2_fooled_ok"].pk, mine["r2_not_bad"].pk}
    s = response.context["summary"]
    # 2 written, 1 fooled of 2 scored -> MER 50%, 1 validated correct, none retracted.
    assert (s["written"], s["fooled"], s["scored"], s["validated"], s["retracted"]) == (2, 1, 2, 1, 0)
    assert "retracted, counted" not in response.text

    response = _get(client, annotator, password, {"task": "sentiment"})
    assert _ids(response) == {mine["sent_not"].pk}
    assert response.context["summary"]["mer"] == 0.0


def test_fooled_and_status_filters(client, annotator, password, mine):
    response = _get(client, annotator, password, {"model_wrong": "true"})
    assert _ids(response) == {
        mine[k].pk for k in ("r1_fooled_ok", "r1_fooled", "r1_retracted", "r2_fooled_ok")
    }
    s = response.context["summary"]
    # The retracted one is listed but counts apart: 3 written, all fooled, MER 3/3 = 100%.
    assert (s["written"], s["fooled"], s["retracted"], s["mer"]) == (3, 3, 1, 1.0)

    response = _get(client, annotator, password, {"model_wrong": "false", "status": "pending"})
    assert _ids(response) == {mine["r1_not"].pk, mine["sent_not"].pk}
    assert response.context["summary"]["mer"] == 0.0

    response = _get(client, annotator, password, {"status": "validated_correct", "task": "hate-speech"})
    assert _ids(response) == {mine["r1_fooled_ok"].pk, mine["r2_fooled_ok"].pk}
    assert response.context["summary"]["validated"] == 2


def test_the_form_shows_labelled_choices_and_keeps_the_values(client, annotator, password, mine):
    html = _get(client, annotator, password, {"task": "hate-speech", "model_wrong": "false"}).text
    for name in ("task", "round", "status", "model_wrong"):
        assert re.search(rf'<label for="id_{name}">', html), name
        assert f'name="{name}"' in html
    assert '<option value="hate-speech" selected>Hate speech</option>' in html
    assert '<option value="sentiment">Sentiment</option>' in html
    assert '<option value="false" selected>Did not fool it</option>' in html
    assert '<option value="2">Round 2</option>' in html
    assert "Clear filters" in html


def test_a_bad_filter_value_is_a_form_error_not_the_whole_list(client, annotator, password, mine):
    response = _get(client, annotator, password, {"status": "nonsense", "colour": "red"})
    assert response.status_code == 200
    assert response.context["rows"] == [] and response.context["summary"] is None
    text = response.text
    assert "&#x27;nonsense&#x27; is not a choice here; choose one of: pending," in text
    assert "Unknown parameter" in text


def test_a_filter_given_twice_is_refused_and_an_unknown_one_only_as_unknown(
    client, annotator, password, mine
):
    client.login(username=annotator.username, password=password)
    response = client.get(URL + "?status=pending&status=flagged&colour=red&colour=blue")
    assert response.context["rows"] == []
    text = response.text
    assert "Give this parameter once; it was given 2 times." in text  # status
    assert text.count("Unknown parameter") == 1  # colour: unknown, not also "given twice"
    assert text.count("Give this parameter once") == 1


def test_pagination_keeps_the_filters(client, annotator, password, hate_round):
    Example.objects.bulk_create(
        Example(
            round=hate_round,
            annotator=annotator,
            inputs={"statement": f"s{i}"},
            target="hateful",
            model_wrong=i % 2 == 0,
        )
        for i in range(102)
    )
    response = _get(client, annotator, password, {"model_wrong": "true"})
    # 51 fooled examples: two pages, the link to the second keeps the filter.
    assert len(response.context["rows"]) == 50
    assert response.context["summary"]["written"] == 51
    assert 'href="?model_wrong=true&amp;page=2"' in response.text
    second = client.get(URL, {"model_wrong": "true", "page": 2})
    assert len(second.context["rows"]) == 1
    assert 'href="?model_wrong=true&amp;page=1"' in second.text
