"""Change the leaderboard's weights with its sliders: the table re-ranks live and the URL keeps them.

Three published models on one scoring dataset of round 1 (as tests/leaderboards/test_leaderboard_page.py):
perf P 0.9, Q 0.6, R 0.3; throughput P 100, Q 400, R 250; memory, fairness and robustness equal, so
their AMRS is 0 and they are left out. AMRS_thr = mean(|400 - 250| / 0.3, |100 - 400| / 0.3) = 750.
Default weights (perf 4, the others 1) rank P (0.4667), Q (0.3667), R (0.1917). With perf at 0 only
throughput counts: Dynascore = ω̃_thr · throughput / 750, so Q > R > P whatever the throughput weight.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from django.urls import reverse
from playwright.sync_api import expect

from tests.factories.leaderboards import DatasetFactory, ScoreFactory

ROWS = "table.leaderboard tbody tr[data-model]"


def _names(page) -> list[str]:
    return page.locator(f"{ROWS} td.name a:not(.runtime-badge)").all_inner_texts()


def test_sliders_re_rank_the_leaderboard_live_and_the_url_keeps_the_weights(
    run, hate_task, hate_round, make_model
):
    dataset = DatasetFactory(task=hate_task, slug="r1", round=hate_round)
    for name, perf, throughput in (("P", 0.9, 100), ("Q", 0.6, 400), ("R", 0.3, 250)):
        ScoreFactory(model=make_model(name), dataset=dataset, perf=perf, throughput=throughput)
    page = run.page_for()
    page.goto(reverse("leaderboards:leaderboard", args=[hate_task.slug]))
    assert _names(page) == ["P", "Q", "R"]
    run.check(page, "default-weights")

    perf = page.get_by_role("slider", name="perf", exact=False).first
    perf.focus()
    page.keyboard.press("Home")  # the keyboard: perf weight to its minimum, 0
    expect(page.locator('output[for="w_perf"]')).to_have_text("0")
    throughput = page.locator("#w_throughput")
    box = throughput.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()  # the mouse: drag the throughput weight to its maximum
    page.mouse.move(box["x"] + box["width"] + 40, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    maximum = throughput.get_attribute("max")
    expect(throughput).to_have_value(maximum)
    expect(page.locator(ROWS).first.locator("td.name a:not(.runtime-badge)")).to_have_text("Q")
    assert _names(page) == ["Q", "R", "P"]
    expect(page.locator("#live-status")).to_contain_text("Q is first")
    run.check(page, "throughput-only")
    live_scores = page.locator(f"{ROWS} td:nth-child(3)").all_inner_texts()

    query = parse_qs(urlsplit(page.url).query)
    assert query["w_perf"] == ["0"] and query["w_throughput"] == [maximum]
    page.reload()  # the server ranks by the weights in the URL, as the script did
    assert _names(page) == ["Q", "R", "P"]
    assert page.locator(f"{ROWS} td:nth-child(3)").all_inner_texts() == live_scores
    expect(throughput).to_have_value(maximum)
    run.assert_clean()
