"""A model's page: card, scores, per-tag table and plot, and the interact box."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from leaderboards.models import Dataset


@pytest.fixture
def carded(make_model, make_dataset, score, annotator, hate_round):
    model = make_model(
        "minilm-quick",
        owner=annotator,
        backbone="all-MiniLM-L6-v2",
        parameter_count=22_713_216,
        card={
            "description": "Frozen MiniLM with a logistic-regression head.",
            "licence": "CC BY 4.0",
            "paper_url": "https://example.org/paper",
            "training": {"rounds": [1, 2], "n_train": 1234},
            "dev_accuracy": 0.646,
            "test_accuracy": {"round 1": 0.645},
        },
    )
    hc = make_dataset("hatecheck")
    r1 = make_dataset("r1", round_=hate_round)
    hidden = make_dataset("secret-test", access=Dataset.Access.HIDDEN)
    score(
        model,
        hc,
        0.651,
        per_tag={
            "functionality:derog_neg_emote_h": {"n": 140, "correct": 98, "accuracy": 0.7},
            "functionality:slur_h": {"n": 144, "correct": 36, "accuracy": 0.25},
            "target:women": {"n": 500, "correct": 400, "accuracy": 0.8},
        },
    )
    score(model, r1, 0.6)
    score(model, hidden, 0.42)
    return model


def test_card_scores_and_per_tag_plot(client, carded, outsider):
    client.force_login(outsider)
    response = client.get(reverse("leaderboards:model", args=[carded.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    for text in (
        "minilm-quick",
        "all-MiniLM-L6-v2",
        "22713216",
        "CC BY 4.0",
        "https://example.org/paper",
        "round(s) 1, 2; 1,234 training examples",
        "Frozen MiniLM",
        "dev accuracy",
        "HATECHECK",
        "0.651",
        "throughput",
    ):
        assert text in html, text
    assert "SECRET-TEST" not in html  # hidden dataset: owners only
    # The per-tag table lists every tag; the plot draws the functionality group.
    assert "target:women" not in html and "women" in html
    chart = response.context["tag_sections"][0]["chart"]
    assert [b.label for b in chart.bars] == ["derog_neg_emote_h", "slur_h"]
    assert chart.bars[0].width == pytest.approx(0.7 * (640 - 260 - 56))
    assert "<svg" in html and 'class="bar"' in html


def test_task_owner_sees_hidden_scores(client, carded, owner):
    client.force_login(owner)
    assert "SECRET-TEST" in client.get(reverse("leaderboards:model", args=[carded.pk])).content.decode()


def test_unknown_model_is_404(client, db):
    assert client.get("/models/987654/").status_code == 404


def test_interact_with_the_tiny_model(client, tiny_registered_model, outsider):
    url = reverse("leaderboards:model", args=[tiny_registered_model.pk])
    client.force_login(outsider)
    response = client.post(url, {"statement": "i love you all"})
    assert response.status_code == 200
    prediction = response.context["prediction"]
    assert prediction["label"] in ("hateful", "not-hateful")
    assert {label for label, _ in prediction["probabilities"]} == {"hateful", "not-hateful"}
    assert sum(p for _, p in prediction["probabilities"]) == pytest.approx(1.0, abs=1e-5)
    assert 'class="predicted-label"' in response.content.decode()


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "Type some text"),
        ("   \n ", "Type some text"),
        ("x" * 2001, "is too long: 2,001 characters, at most 2,000 allowed."),
        ("a\x00b", "Null"),
        # As on the create page: control characters, bidi overrides, nothing visible.
        ("a\x07b", "contains the control character U+0007"),
        ("abc\u202edef", "contains U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("\u200b\u200b", "has no visible character"),
    ],
)
def test_interact_validates_the_text(client, tiny_registered_model, outsider, text, message):
    client.force_login(outsider)
    response = client.post(
        reverse("leaderboards:model", args=[tiny_registered_model.pk]), {"statement": text}
    )
    assert response.status_code == 200
    assert response.context["prediction"] is None
    assert message in response.content.decode()


def test_interact_counts_a_long_text_instead_of_letting_the_browser_cut_it(
    client, tiny_registered_model, outsider
):
    client.force_login(outsider)
    url = reverse("leaderboards:model", args=[tiny_registered_model.pk])
    page = client.get(url).content.decode()
    textarea = re.search(r"<textarea[^>]*>", page).group(0)
    assert "maxlength" not in textarea and 'data-max-length="2000"' in textarea
    assert "At most 2,000 characters." in page
    # 1,000 CRLF pairs are 2,000 characters once CRLF becomes LF: accepted, as the create page counts
    response = client.post(url, {"statement": "a\r\n" * 1000})
    assert response.context["prediction"] is not None


def test_interact_needs_login(client, tiny_registered_model):
    url = reverse("leaderboards:model", args=[tiny_registered_model.pk])
    response = client.post(url, {"statement": "hello"})
    assert response.status_code == 200
    assert response.context["prediction"] is None
    assert "Log in" in response.content.decode()


def test_crashing_model_shows_a_message(client, crashing_model, outsider):
    client.force_login(outsider)
    response = client.post(reverse("leaderboards:model", args=[crashing_model.pk]), {"statement": "hello"})
    assert response.status_code == 200
    assert "could not answer" in response.content.decode()
    assert "simulated crash" in response.content.decode()


def test_interact_with_a_model_that_is_not_ready(client, make_model, outsider):
    from models_registry.models import RegisteredModel

    model = make_model("broken")
    model.status = RegisteredModel.Status.FAILED
    model.save()
    client.force_login(outsider)
    response = client.post(reverse("leaderboards:model", args=[model.pk]), {"statement": "hello"})
    assert response.status_code == 200
    assert "not ready" in response.content.decode()


def test_a_score_being_measured_again_says_its_figures_are_the_previous_ones(client, carded, outsider):
    """After a runtime change the Scores are pending again but keep the last figures: the page says
    whose they are instead of passing them off as the current runtime's."""
    from leaderboards.models import Score

    hatecheck = Score.objects.get(model=carded, dataset__slug="hatecheck")
    Score.objects.filter(pk=hatecheck.pk).update(
        status=Score.Status.PENDING, metrics={**hatecheck.metrics, "runtime": "onnx-int8"}
    )
    client.force_login(outsider)
    html = client.get(reverse("leaderboards:model", args=[carded.pk])).content.decode()
    assert html.count('class="muted previous-figures"') == 1  # the round-1 Score is done: not marked
    assert html.count("previous-figures-note") == 1  # one note above the table, not one per row
    assert "show the previous evaluation's figures, measured on ONNX Runtime, int8 weights, until" in html
    Score.objects.filter(pk=hatecheck.pk).update(status=Score.Status.FAILED)
    html = client.get(reverse("leaderboards:model", args=[carded.pk])).content.decode()
    assert "previous-figures" not in html
