"""A red-teaming example on its author's pages: the outcome page shows the conversation and the author's
judgement (or the item with its answer and the model's pick), and "My examples" lists them by text."""

from __future__ import annotations

import re

import pytest

from annotation.models import Example
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Task
from tasks.services import ensure_round, set_current_round

pytestmark = pytest.mark.django_db


@pytest.fixture
def examples(annotator):
    task = Task.objects.create(slug="red-team", name="Red-team", config=RED_TEAM_CONFIG)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    context = Context.objects.create(task=task, round=round_, data={"passage": "The Nile is in Africa."})
    conversation = Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={
            "messages": [
                {"role": "user", "content": "Where is the Nile? 🌍"},
                {"role": "assistant", "content": "In South America."},
            ]
        },
        target={"supported": "no", "helpful": "2"},
        model_wrong=True,
        tags=["contradiction"],
        metadata={"mode": "conversation", "turns": 1},
    )
    item = Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={"question": "Where is the Nile?", "options": ["Asia", "Africa", "Europe"]},
        target={"answer": 1},
        model_wrong=True,
        metadata={"mode": "multiple_choice", "picked": 2},
    )
    return conversation, item


def test_the_outcome_page_shows_the_conversation_and_the_authors_judgement(client, annotator, examples):
    conversation, _ = examples
    client.force_login(annotator)
    html = client.get(f"/examples/{conversation.pk}/").content.decode()
    assert "Where is the Nile? 🌍" in html and "In South America." in html
    assert (
        "<dt>Is everything the answer states about the passage supported by it?</dt><dd>no <strong>(failure)</strong></dd>"
        in html
    )
    assert "<dt>How well does the answer address the message? (1 not at all, 5 fully)</dt><dd>2</dd>" in html
    assert "<dt>Kind of failure</dt><dd>Contradicts the passage</dd>" in html
    assert "Judged a failure of the model." in html
    assert "Try a variation" not in html and "{&#x27;" not in html


def test_the_outcome_page_of_an_item_marks_the_answer_and_the_pick(client, annotator, examples):
    _, item = examples
    client.force_login(annotator)
    html = client.get(f"/examples/{item.pk}/").content.decode()
    assert "Africa <strong>(correct)</strong>" in html and "Europe <em>(the model's pick)</em>" in html
    assert "The model picked a wrong option: fooled." in html


def test_my_examples_lists_them_by_their_text(client, annotator, examples):
    client.force_login(annotator)
    html = client.get("/me/examples/").content.decode()
    rows = html.split("<tbody>")[1].split("</tbody>")[0]
    cells = [c.strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", rows, flags=re.DOTALL)]
    flat = " | ".join(re.sub(r"<[^>]+>", "", c).strip() for c in cells)
    assert "Where is the Nile? | Africa | Europe" in flat
    assert "Where is the Nile? 🌍 | failure | 1 answer" in flat
