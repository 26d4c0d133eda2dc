"""The task list as cards: status (open / setting up / closed), the current round's MER, the viewer's
own count, and Write and Validate buttons only on open tasks; in a fixed number of queries."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tasks.services import close_round, ensure_round
from tests.factories.annotation import make_example
from tests.factories.models_registry import make_stand_in
from tests.factories.tasks import builtin_task, open_round

URL = reverse("tasks:list")


def _card(html: str, slug: str) -> str:
    """The markup of the card of task ``slug``."""
    match = re.search(rf'<li class="task-card[^"]*" data-task="{slug}">(.*?)</li>', html, re.S)
    assert match, f"no card for {slug}"
    return match.group(0)


def test_open_card_shows_mer_own_count_and_both_buttons(client, annotator, validator, password, hate_round):
    make_stand_in(hate_round.task, hate_round)
    # By hand: 5 scored examples in round 1, 2 fooled the model -> MER 2/5 = 40%. One unscored and one
    # retracted example count in neither; one imported example is out of MER too.
    make_example(hate_round, annotator, model_wrong=True)
    make_example(hate_round, annotator, model_wrong=True)
    make_example(hate_round, annotator, model_wrong=False)
    make_example(hate_round, validator, model_wrong=False)
    make_example(hate_round, validator, model_wrong=False)
    make_example(hate_round, validator, model_wrong=None, prediction_status="failed")
    make_example(hate_round, annotator, model_wrong=True, is_retracted=True)
    make_example(hate_round, annotator, model_wrong=True, source="imported")

    client.login(username=annotator.username, password=password)
    response = client.get(URL)

    assert response.status_code == 200
    [card] = response.context["cards"]
    assert (card.status, card.scored, card.fooling, card.mer) == ("open", 5, 2, 0.4)
    # The annotator's own: 3 written here and kept (the retracted and the imported ones are not).
    assert card.mine == 3
    html = _card(response.text, "hate-speech")
    assert "<strong>40%</strong>" in html and "(2 of 5 fooled the model)" in html
    assert "round 1" in html
    assert '<dd class="card-mine"><strong>3</strong></dd>' in html
    assert ">Open</span>" in html
    assert f'href="{reverse("annotation:create", args=["hate-speech"])}"' in html
    assert f'href="{reverse("validation:validate", args=["hate-speech"])}"' in html
    assert "Write a statement that the model labels wrongly" in html


def test_anonymous_viewer_has_no_own_count(client, hate_round):
    response = client.get(URL)
    [card] = response.context["cards"]
    assert card.mine is None
    assert "Your examples" not in response.text
    assert "not measured yet" in response.text  # nothing scored in round 1


def test_a_round_whose_target_is_not_ready_is_setting_up(client, hate_task, hate_round):
    # Only a ready model can be made a target; one that is checked again afterwards is not ready.
    target = make_stand_in(hate_task, hate_round)
    type(target).objects.filter(pk=target.pk).update(status="checking")
    response = client.get(URL)
    [card] = response.context["cards"]
    assert card.status == "setting-up"
    html = _card(response.text, "hate-speech")
    assert ">Setting up</span>" in html and "target model is not ready yet" in html
    assert reverse("annotation:create", args=["hate-speech"]) not in html
    assert reverse("validation:validate", args=["hate-speech"]) not in html


def test_a_task_with_no_round_yet_is_setting_up(client, hate_task):
    response = client.get(URL)
    [card] = response.context["cards"]
    assert card.status == "setting-up"
    assert "no round is open yet" in _card(response.text, "hate-speech")


def test_the_demo_mid_setup_is_setting_up_not_closed(client, hate_task):
    # As lay_out_task leaves a task while it trains: early rounds closed, the open round made but not
    # yet current.
    close_round(round_=ensure_round(task=hate_task, number=1))
    ensure_round(task=hate_task, number=2)
    [card] = client.get(URL).context["cards"]
    assert card.status == "setting-up"


def test_closed_current_round_is_closed_without_buttons(client, hate_task, hate_round):
    close_round(round_=hate_round)
    response = client.get(URL)
    [card] = response.context["cards"]
    assert card.status == "closed"
    html = _card(response.text, "hate-speech")
    assert ">Closed</span>" in html and "not collecting examples" in html
    assert reverse("annotation:create", args=["hate-speech"]) not in html
    assert reverse("validation:validate", args=["hate-speech"]) not in html


def test_every_round_closed_and_none_current_is_closed(client, hate_task, hate_round):
    close_round(round_=hate_round)
    hate_task.current_round = None
    hate_task.save(update_fields=["current_round"])
    [card] = client.get(URL).context["cards"]
    assert card.status == "closed"


@pytest.mark.parametrize("n_tasks", [1, 4])
def test_the_list_takes_a_fixed_number_of_queries(
    client, annotator, password, django_assert_max_num_queries, n_tasks
):
    slugs = ["hate-speech", "sentiment", "nli", "qa"][:n_tasks]
    for slug in slugs:
        round_ = open_round(builtin_task(slug))
        make_stand_in(round_.task, round_, name=f"target-{slug}")
        make_example(round_, annotator, model_wrong=True, target="x")
        make_example(round_, annotator, model_wrong=False, target="x")
    client.login(username=annotator.username, password=password)
    # Session and user (2), then the page: tasks, counts, targets, rounds without a current one, own
    # examples (5); the same for 1 task and for 4.
    with django_assert_max_num_queries(7):
        response = client.get(URL)
    cards = response.context["cards"]
    assert [c.mer for c in cards] == [0.5] * n_tasks
    assert [c.mine for c in cards] == [2] * n_tasks
