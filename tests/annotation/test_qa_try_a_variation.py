"""QA's "Try a variation" keeps the answer's span (issue 29): an answer selected at its third occurrence in
the passage stays there in the variation, not at the first.

The passage has "Paris" three times; by hand, counting code points: "Paris is a city. " is 17,
"Many people visit " 18 (the second "Paris" at 35), "Paris in spring. " 17, "The Louvre in " 14: the third
"Paris" starts at 35 + 17 + 14 = 66.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import Example
from annotation.services import create_example
from models_registry import inference
from tests.factories.models_registry import make_stand_in
from tests.factories.tasks import ContextFactory, open_round

URL = reverse("annotation:create", args=["qa"])
PASSAGE = "Paris is a city. Many people visit Paris in spring. The Louvre in Paris is a museum."
THIRD = 66


def answers_the_louvre(model, inputs: list[dict]) -> list[dict]:
    return [{"answer": "The Louvre", "answer_start": 52, "score": 0.9}] * len(inputs)


@pytest.fixture
def passage(qa_task, monkeypatch):
    monkeypatch.setattr(inference, "predict", answers_the_louvre)
    round_ = open_round(qa_task)
    make_stand_in(qa_task, round_)
    return ContextFactory(round=round_, data={"title": "Paris", "context": PASSAGE})


def test_the_passage_has_paris_three_times_where_counted_by_hand():
    assert [m.start() for m in re.finditer("Paris", PASSAGE)] == [0, 35, THIRD]


def test_try_a_variation_keeps_the_selected_occurrence(client, annotator, qa_task, passage):
    example, _ = create_example(
        task=qa_task,
        annotator=annotator,
        inputs={"question": "Where is the Louvre?"},
        target={"answer": "Paris", "answer_start": THIRD},
        context=passage,
    )
    assert example.target == {"answer": "Paris", "answer_start": THIRD}
    client.force_login(annotator)
    outcome = client.get(reverse("annotation:outcome", args=[example.pk])).text
    assert f'href="{URL}?variation={example.pk}">Try a variation</a>' in outcome

    page = client.get(URL, {"variation": example.pk})
    form = page.context["form"]
    assert page.context["served_context"] == passage
    assert 'name="answer" value="Paris"' in page.text
    assert re.search(rf'<input type="hidden" name="answer_start" value="{THIRD}"', page.text)

    # sent as the page holds it, with a new question: the answer stays at the third "Paris"
    response = client.post(
        URL,
        {
            "question": "In which city is the Louvre?",
            "answer": form["answer"].value(),
            "answer_start": form["answer_start"].value(),
            "client_token": str(form["client_token"].value()),
            "started": form["started"].value(),
            "context": str(passage.pk),
            "round": str(qa_task.current_round_id),
        },
    )
    assert response.status_code == 302
    variation = Example.objects.latest("pk")
    assert variation.pk != example.pk
    assert variation.target == {"answer": "Paris", "answer_start": THIRD}


def test_a_variation_served_another_passage_does_not_carry_the_offset(client, annotator, qa_task, passage):
    example, _ = create_example(
        task=qa_task,
        annotator=annotator,
        inputs={"question": "Where is the Louvre?"},
        target={"answer": "Paris", "answer_start": THIRD},
        context=passage,
    )
    round_2 = open_round(qa_task, number=2)  # the example's passage is not in the current round
    ContextFactory(round=round_2, data={"title": "Paris", "context": "Paris, again: Paris."})
    client.force_login(annotator)
    page = client.get(URL, {"variation": example.pk})
    assert page.context["served_context"].round == round_2
    assert 'name="answer" value="Paris"' in page.text  # the answer text, to find in the new passage
    assert re.search(r'<input type="hidden" name="answer_start"(?! value=)[^>]*>', page.text)
