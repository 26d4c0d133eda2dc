"""The real MiniLM backbone: the quick recipe must learn a trivially separable toy set."""

from __future__ import annotations

import pytest

from engine.runtime.classifier import clear_cache, get_classifier
from engine.training.classifier import train_classifier

# Two topics no sentence encoder can confuse: weather vs. cooking (labels are arbitrary here).
WEATHER = [
    "it is raining heavily today",
    "the forecast says snow tomorrow",
    "a sunny and warm afternoon ☀️",
    "strong winds and thunderstorms tonight ⛈️",
    "cloudy skies with a chance of rain 🌧️",
    "the temperature dropped below freezing",
    "a heatwave is expected this week",
    "fog covered the valley this morning",
    "hail fell during the storm",
    "the weather will be mild and dry",
    "heavy rain caused flooding",
    "clear skies and a cold night ❄️",
    "the storm brought lightning and thunder",
    "humid weather with light showers",
    "sunshine all day at the beach",
    "a blizzard is coming from the north",
    "drizzle and grey clouds today",
    "the wind is blowing hard outside 🌬️",
    "rain is forecast for the weekend",
    "it will be hot and sunny",
]
COOKING = [
    "add two cups of flour to the bowl",
    "bake the bread for thirty minutes 🍞",
    "chop the onions and fry them in butter",
    "stir the soup and add salt",
    "the pasta needs ten minutes to boil 🍝",
    "whisk the eggs with sugar",
    "roast the chicken in the oven 🍗",
    "slice the tomatoes for the salad 🍅",
    "melt the chocolate over low heat",
    "knead the dough until smooth",
    "season the steak with pepper",
    "simmer the sauce for an hour",
    "grate the cheese over the pizza 🍕",
    "peel and boil the potatoes",
    "mix the batter and pour it into the pan",
    "fry the fish in olive oil 🐟",
    "the recipe calls for garlic and basil",
    "blend the fruit into a smoothie",
    "grill the vegetables on the barbecue",
    "cook the rice with a pinch of salt 🍚",
]


@pytest.mark.slow
@pytest.mark.training
def test_quick_recipe_on_minilm_separates_a_toy_set(tmp_path):
    texts = WEATHER + COOKING
    labels = ["hateful"] * len(WEATHER) + ["not-hateful"] * len(COOKING)
    train_idx = [i for i in range(len(texts)) if i % 4 != 0]
    dev_idx = [i for i in range(len(texts)) if i % 4 == 0]
    result = train_classifier(
        train_texts=[texts[i] for i in train_idx],
        train_labels=[labels[i] for i in train_idx],
        dev_texts=[texts[i] for i in dev_idx],
        dev_labels=[labels[i] for i in dev_idx],
        labels=["hateful", "not-hateful"],
        output_dir=tmp_path / "minilm-quick",
        recipe="quick",
    )
    assert result.dev_accuracy == 1.0
    assert result.parameter_count > 22_000_000  # MiniLM-L6: ~22.6M
    assert result.details["backbone"] == "sentence-transformers/all-MiniLM-L6-v2"
    clear_cache()
    predictions = get_classifier(result.path).predict_batch(["light rain this evening", "stir in the butter"])
    assert [p["label"] for p in predictions] == ["hateful", "not-hateful"]
    clear_cache()
