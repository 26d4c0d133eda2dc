"""The model page reads well: "Try it" first, figures with units and separators, readable
functionality names, a dashed overall line on the per-tag chart; and the leaderboard's row badge for a
model missing a dataset's score."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from leaderboards.charts import LABEL_WIDTH, RIGHT, bar_chart
from leaderboards.model_page import metric_figures, overall_for_tags, tag_name


@pytest.fixture
def tagged(make_model, make_dataset, score, outsider):
    model = make_model("minilm-quick", parameter_count=22_713_216)
    hc = make_dataset("hatecheck")
    s = score(
        model,
        hc,
        0.62,
        throughput=1234.56,
        memory=0.0912,
        fairness=0.95,
        robustness=0.875,
        per_tag={
            "functionality:derog_impl_h": {"n": 140, "correct": 98, "accuracy": 0.7},
            "functionality:slur_h": {"n": 144, "correct": 36, "accuracy": 0.25},
            "functionality:made_up_code": {"n": 10, "correct": 5, "accuracy": 0.5},
            "target:women": {"n": 500, "correct": 400, "accuracy": 0.8},
        },
    )
    s.metrics.update({"accuracy": 0.65, "macro_f1": 0.6234, "n": 3425, "memory_method": "torch dispatch"})
    s.save()
    return model


def _page(client, model, user=None):
    if user is not None:
        client.force_login(user)
    response = client.get(reverse("leaderboards:model", args=[model.pk]))
    assert response.status_code == 200
    return response


def test_try_it_comes_first_after_the_header(client, tagged, outsider):
    html = _page(client, tagged, outsider).content.decode()
    assert html.index('<h2 id="interact">Try it</h2>') < html.index("<h2>Model card</h2>")
    assert html.index("<h1") < html.index('<h2 id="interact">Try it</h2>')
    assert html.index("<h2>Model card</h2>") < html.index("<h2>Scores per dataset</h2>")


def test_parameter_count_has_thousands_separators(client, tagged):
    html = _page(client, tagged).content.decode()
    assert '<data value="22713216">22,713,216</data>' in html


def test_figures_are_formatted_with_units_and_no_dict_dump(client, tagged):
    html = _page(client, tagged).content.decode()
    for text in (
        "accuracy <strong>65.0%</strong>",
        "macro-F1 <strong>0.623</strong>",
        "throughput <strong>1,234.6 examples/s</strong>",
        "memory <strong>0.09 GiB</strong>",
        "fairness <strong>95.0%</strong>",
        "robustness <strong>87.5%</strong>",
        "items <strong>3,425</strong>",
    ):
        assert text in html, text
    assert "torch dispatch" not in html and "{" not in re.sub(
        r"<(script|style)[^>]*>.*?</\1>", "", html, flags=re.S
    )


def test_metric_figures_by_hand():
    figures = metric_figures(
        {
            "throughput": 98765.432,
            "memory": 1.005,
            "n": 1000000,
            "seconds": 12.34,
            "zeta": 0.000123456,
            "x": "text",
        }
    )
    assert figures == [
        ("throughput", "98,765.4 examples/s"),
        ("memory", "1.00 GiB"),  # 1.005 is 1.00499... in binary
        ("items", "1,000,000"),
        ("time", "12.3 s"),
        ("zeta", "0.0001235"),
    ]
    assert metric_figures(None) == [] and metric_figures({"perf_metric": "accuracy"}) == []


def test_functionality_tags_have_readable_names(client, tagged):
    response = _page(client, tagged)
    html = response.content.decode()
    assert "Implicit derogation" in html and "Hate expressed using slur" in html
    assert '<code class="tag-code">derog_impl_h</code>' in html  # the code stays beside it
    assert "made up code" in html  # unknown code: underscores as spaces
    [section] = response.context["tag_sections"]
    chart = section["chart"]
    assert [b.text for b in chart.bars] == [
        "Implicit derogation",
        "made up code",
        "Hate expressed using slur",
    ]
    assert ">Implicit derogation</text>" in str(chart.svg)
    assert tag_name("functionality", "spell_leet_h") == "Leet speak spellings"
    assert tag_name("functionality", "positive_confounder").startswith("Positive confounder")
    assert tag_name("target", "black_people") == "black people"


def test_the_per_tag_chart_has_a_dashed_overall_line(client, tagged):
    [section] = _page(client, tagged).context["tag_sections"]
    chart = section["chart"]
    # The whole dataset's accuracy (0.65, beside a perf of 0.62) on the 640 px chart:
    # x = 260 + 0.65 * (640 - 260 - 56) = 470.6.
    assert chart.overall_x == pytest.approx(LABEL_WIDTH + 0.65 * (640 - LABEL_WIDTH - RIGHT))
    assert chart.overall_x == pytest.approx(470.6)
    svg = str(chart.svg)
    assert re.search(
        r'<line class="overall" x1="470.6" y1="16" x2="470.6" y2="\d+"[^>]*stroke-dasharray', svg
    )
    assert "overall accuracy 65.0%" in svg


def test_overall_figure_choice():
    assert overall_for_tags(0.62, {"accuracy": 0.65}, "macro_f1") == (0.65, "accuracy")
    assert overall_for_tags(0.7, {"exact_match": 0.5, "f1": 0.7}, "squad_f1") == (0.5, "exact match")
    assert overall_for_tags(0.7, {}, "macro_f1") == (0.7, "macro f1")
    assert overall_for_tags(None, {}, "accuracy") == (None, "")
    assert bar_chart([("a", 0.5, 1)]).overall_x is None
    with pytest.raises(ValueError):
        bar_chart([("a", 0.5, 1)], overall=1.5)


def test_incomplete_badge_in_the_row_of_a_model_missing_a_dataset(
    client, hate_task, hate_round, make_dataset, make_model, score
):
    r1, hc = make_dataset("r1", round_=hate_round), make_dataset("hc")
    full, partial = make_model("Full"), make_model("Partial")
    score(full, r1, 0.8)
    score(full, hc, 0.7)
    score(partial, r1, 0.9)  # no HC score
    html = client.get(reverse("leaderboards:leaderboard", args=[hate_task.slug])).content.decode()
    rows = {pk: css for css, pk in re.findall(r'<tr class="([^"]*)" data-model="(\d+)">', html)}
    assert rows[str(partial.pk)] == "incomplete" and rows[str(full.pk)] == ""
    row = re.search(rf'data-model="{partial.pk}">(.*?)</tr>', html, re.S).group(1)
    assert '<span class="badge incomplete-badge" title="Missing scores: HC">incomplete</span>' in row
    full_row = re.search(rf'data-model="{full.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "incomplete" not in full_row
