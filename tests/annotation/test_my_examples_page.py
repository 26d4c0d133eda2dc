"""/me/examples/: the annotator's own examples, newest first, 50 a page."""

from __future__ import annotations

from django.urls import reverse

from annotation.models import Example
from annotation.services import create_example, flag_example, retract_example

URL = reverse("annotation:my_examples")


def _create(task, user, statement, label="hateful"):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target=label)[0]


def test_anonymous_is_sent_to_login(client, db):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('account_login')}?next={URL}"


def test_lists_only_my_examples_newest_first(client, annotator, validator, password, hate_task, rule_model):
    fooled = _create(hate_task, annotator, "they should go back home")  # not-hateful by the rule: fooled
    right = _create(hate_task, annotator, "I hate them", "hateful")
    retracted = _create(hate_task, annotator, "שלום " + "x" * 200, "not-hateful")
    retract_example(example=retracted, user=annotator)
    flag_example(example=right, user=annotator, reason="typo")
    _create(hate_task, validator, "someone else's statement")

    client.login(username=annotator.username, password=password)
    response = client.get(URL)

    assert response.status_code == 200
    rows = response.context["rows"]
    assert [r["example"].pk for r in rows] == [retracted.pk, right.pk, fooled.pk]
    text = response.text
    assert "someone else" not in text
    for example in (fooled, right, retracted):
        assert f'href="{reverse("annotation:outcome", args=[example.pk])}"' in text
    assert rows[2]["model_labels"] == "not-hateful" and rows[1]["model_labels"] == "hateful"
    assert 'dir="auto"' in text and "שלום " + "x" * 74 + "…" in text  # truncated to 80
    assert "Retracted" in text and "Not scored yet" not in text
    assert f"{hate_task.name} · round 1" in text
    assert "Yes" in text and "No" in text and "Pending" in text


def test_fifty_a_page(client, annotator, password, hate_task, hate_round):
    Example.objects.bulk_create(
        Example(round=hate_round, annotator=annotator, inputs={"statement": f"s{i}"}, target="hateful")
        for i in range(51)
    )
    client.login(username=annotator.username, password=password)
    first = client.get(URL)
    assert len(first.context["rows"]) == 50
    assert "Page 1 of 2" in first.text and 'href="?page=2"' in first.text
    second = client.get(URL, {"page": 2})
    assert len(second.context["rows"]) == 1


def test_empty_list_and_header_link(client, annotator, password, db):
    client.login(username=annotator.username, password=password)
    response = client.get(URL)
    assert "You have not written any example yet." in response.text
    assert f'<a href="{URL}">My examples</a>' in response.text


def test_a_long_row_of_emoji_is_shortened_between_whole_emoji(
    client, annotator, password, hate_task, rule_model
):
    family = "👨\u200d👩\u200d👧"  # one emoji of 5 code points
    _create(hate_task, annotator, family * 100)
    client.login(username=annotator.username, password=password)
    text = client.get(URL).text
    assert family * 79 + "…<" in text  # 80 characters on screen, the last one the ellipsis
    assert family * 80 not in text
