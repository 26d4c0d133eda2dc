"""The sentiment create page: the prompt (an optional context field) is shown when the round has
prompts, and the page still works without one."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Example
from tasks.models import Context
from tasks.services import ensure_round, set_current_round

pytestmark = pytest.mark.django_db


@pytest.fixture
def open_round(sentiment_task):
    round_ = ensure_round(task=sentiment_task, number=3)
    set_current_round(task=sentiment_task, round_=round_)
    return round_


def _post(client, page, **data):
    form = page.context["form"]
    payload = {"client_token": form.initial["client_token"], "started": form.initial["started"], **data}
    return client.post(reverse("annotation:create", args=["sentiment"]), payload)


def test_without_prompts_the_annotator_writes_without_a_context(client, annotator, open_round):
    client.force_login(annotator)
    page = client.get(reverse("annotation:create", args=["sentiment"]))
    html = page.content.decode()
    assert "No contexts are loaded" not in html and 'name="statement"' in html
    assert [c for c, _ in page.context["form"].fields["label"].choices] == ["positive", "negative", "neutral"]
    response = _post(client, page, statement="The soup was cold, the waiter was not.", label="negative")
    assert response.status_code == 302
    example = Example.objects.get(annotator=annotator)
    assert example.context is None and example.target == "negative"


def test_a_prompt_is_served_and_kept_with_the_example(client, annotator, open_round, sentiment_task):
    prompt = "Staff were very nice and professional — מלון נהדר 🙂"
    context = Context.objects.create(task=sentiment_task, round=open_round, data={"prompt": prompt})
    client.force_login(annotator)
    page = client.get(reverse("annotation:create", args=["sentiment"]))
    assert "Prompt sentence" in page.content.decode() and prompt in page.content.decode()
    response = _post(
        client,
        page,
        statement="Nice staff, shame about everything else.",
        label="negative",
        context=context.pk,
    )
    assert response.status_code == 302
    assert Example.objects.get(annotator=annotator).context == context
    # A context id that is not of this round (sent by a page whose stamp names no context: an older
    # page) is refused, and the text is kept apart from the form.
    other = ensure_round(task=sentiment_task, number=1)
    stale = Context.objects.create(task=sentiment_task, round=other, data={"prompt": "old"})
    page = client.get(reverse("annotation:create", args=["sentiment"]))
    response = _post(client, page, statement="Second try.", label="neutral", context=stale.pk, started="")
    assert response.status_code == 200
    html = response.content.decode()
    assert (
        "The prompt sentence you wrote for is no longer available (its round is over), so your example "
        "was not saved." in html
    )
    unsaved = html[html.index('<section class="unsaved"') :]
    assert "Second try." in unsaved[: unsaved.index("</section>")] and "old" in unsaved
    assert Example.objects.filter(annotator=annotator).count() == 1
