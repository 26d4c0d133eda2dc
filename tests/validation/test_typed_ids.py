"""Ids and round numbers typed as text on the validation paths are ASCII digits only.

``" 5"``, ``"5.0"``, ``"1_0"`` (which ``int()`` reads as 10) and Arabic-Indic digits are refused, on the
validate page's hidden example field and on ``?round=`` of the API's next-example endpoint, instead of
being read as another id.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories.annotation import make_example
from validation.models import Validation
from validation.selectors import round_of

URL = reverse("validation:validate", args=["hate-speech"])
NEXT = "/api/tasks/hate-speech/validations/next/"
LOOK_ALIKES = [" {pk}", "{pk} ", "{pk}.0", "+{pk}", "0{pk}_0", "٠١"]


@pytest.mark.parametrize("shape", LOOK_ALIKES)
def test_the_validate_form_reads_no_look_alike_of_an_id(
    client, validator, password, hate_round, annotator, shape
):
    example = make_example(hate_round, annotator, model_wrong=True)
    assert client.login(username=validator.username, password=password)
    client.get(URL)
    response = client.post(URL, {"example": shape.format(pk=example.pk), "verdict": "correct", "round": 1})
    assert response.status_code == 302
    assert "Enter a whole number." in client.get(response["Location"]).text
    assert not Validation.objects.exists()


def test_the_validate_form_still_takes_the_id_itself(client, validator, password, hate_round, annotator):
    example = make_example(hate_round, annotator, model_wrong=True)
    assert client.login(username=validator.username, password=password)
    client.get(URL)
    client.post(URL, {"example": str(example.pk), "verdict": "correct", "round": 1})
    assert list(Validation.objects.values_list("example_id", "verdict")) == [(example.pk, "correct")]


@pytest.mark.parametrize("raw", [" 1", "1 ", "1.0", "+1", "0_1", "١", "²"])
def test_next_example_round_parameter_is_ascii_digits(api, hate_round, validator, raw):
    response = api(validator).get(NEXT, {"round": raw})
    assert response.status_code == 400
    assert response.json() == {"round": ["A whole number written with the digits 0-9."]}


def test_round_of_reads_ascii_digits_and_ints_only(hate_task, hate_round):
    assert round_of(hate_task, "1") == hate_round
    assert round_of(hate_task, 1) == hate_round
    assert round_of(hate_task, "") == hate_round  # empty: the current round
    assert [round_of(hate_task, raw) for raw in (" 1", "1.0", "0_1", "١", "9" * 5000)] == [None] * 5
