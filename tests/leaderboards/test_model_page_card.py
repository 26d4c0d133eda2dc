"""The model page's "Figures" list holds measured figures only; preprocessing and the target round are
card facts (a tester found them mixed in one list)."""

from __future__ import annotations

import re

from django.urls import reverse

from engine.runtime.classifier import clear_cache
from models_registry.services import register_local_model


def _figures_table(page: str) -> str:
    match = re.search(r'<table class="figures">(.*?)</table>', page, re.S)
    assert match, "no figures table"
    return match.group(1)


def test_figures_hold_measured_numbers_and_facts_stay_in_the_card(client, hate_task, tiny_model_dir):
    card = {"target_round": 1, "dev_accuracy": 0.625, "test_accuracy": {"r1": 0.5}, "seed": 3}
    model = register_local_model(task=hate_task, name="carded", path=tiny_model_dir, card=card)
    clear_cache()
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    figures = _figures_table(page)
    assert re.findall(r'<th scope="row">(.*?)</th>', figures) == ["dev accuracy", "test accuracy: r1"]
    assert "preprocessing" not in figures and "target round" not in figures and "version" not in figures
    # The tiny model's config carries the default preprocessing spec (engine.runtime.preprocessing).
    assert (
        "<dt>Preprocessing</dt><dd>version 1, collapse whitespace yes, emoji names, "
        "unicode normalization NFKC</dd>" in page
    )
    assert "<dt>Target of</dt><dd>round 1</dd>" in page


def test_a_card_without_those_facts_shows_neither(client, hate_task, tiny_model_dir):
    model = register_local_model(
        task=hate_task, name="plain", path=tiny_model_dir, card={"preprocessing": {}}
    )
    clear_cache()
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    assert "<dt>Preprocessing</dt>" not in page and "<dt>Target of</dt>" not in page
    assert '<table class="figures">' not in page


def test_a_trained_targets_test_figures_come_from_its_scores(client, hate_task, tiny_model_dir):
    """Training measures no test split: the page shows the done Scores of the card's ``test_datasets``."""
    from leaderboards.models import Dataset, Score

    card = {"dev_accuracy": 0.625, "test_datasets": ["round-1-test", "hatecheck", "round-2-test"]}
    model = register_local_model(task=hate_task, name="trained", path=tiny_model_dir, card=card)
    clear_cache()
    test1 = Dataset.objects.create(task=hate_task, slug="round-1-test", name="Round 1 test", kind="round")
    hatecheck = Dataset.objects.create(task=hate_task, slug="hatecheck", name="HateCheck", kind="static")
    Score.objects.update_or_create(
        model=model,
        dataset=test1,
        defaults={"status": "done", "perf": 0.75, "metrics": {"accuracy": 0.75, "n": 4}},
    )
    # Not done yet: no figure (nor for round-2-test, which has no dataset).
    Score.objects.update_or_create(
        model=model, dataset=hatecheck, defaults={"status": "pending", "metrics": {}}
    )
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    figures = _figures_table(page)
    rows = re.findall(r'<th scope="row">(.*?)</th>\s*<td class="num">(.*?)</td>', figures)
    assert [row for row in rows if row[0].startswith(("dev ", "test "))] == [
        ("dev accuracy", "0.6250"),
        ("test accuracy: round-1-test", "0.7500"),
    ]
