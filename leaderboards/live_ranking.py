"""What the leaderboard's weight sliders need to re-rank the table in the browser
(``leaderboards/static/leaderboards/live_ranking.js``).

The script recomputes the Dynascore exactly as ``leaderboards.dynascore.compute_dynascore`` does, with
the leaderboard's own steps around it (``selectors.build_leaderboard``: unmeasurable metrics are not
missing scores; ``forms.parse_leaderboard_query``: all-zero weights fall back to the defaults; rows
sorted by ``selectors.sort_rows``). It needs the scores behind the table: s_mdj per shown model,
shown scoring dataset and metric, which the table itself (aggregates only) does not carry. The
server's table stays the reference: the page works without the script, and
``tests/leaderboards/test_pages_live_ranking_js.py`` checks that both agree on a hand-made table.
"""

from __future__ import annotations

from .dynascore import RESOLUTION_SLACK, RESOLUTIONS, SORT_DECIMALS, TIE_TOLERANCE, measured_spreads
from .models import Score
from .selectors import score_values


def live_payload(table: dict, *, default_metric_weights: dict[str, float]) -> dict:
    """The JSON-ready data of ``leaderboards/_live_data`` for a table of ``build_leaderboard``.

    One query (the done scores of the table's models on its datasets).

    Returns ``{"metrics", "memory_ceiling", "tie_tolerance", "sort_decimals", "resolution_slack",
    "resolutions" ({metric: {"absolute", "relative", "measured"}}), "default_metric_weights", "datasets"
    (ids, the table's order), "dataset_names" ({id: name}), "models" ([{"id", "not_measurable", "scores":
    {dataset id: {metric: value or None}}, "spreads": {dataset id: {metric: relative spread}}}], by id:
    the order ``compute_dynascore`` gets them in)}``; dataset ids are strings, as in the table's rows.
    ``spreads`` holds the measured spreads of the noise guard (``dynascore.measured_spreads``: a
    Score without one has no entry, and the script counts it with the fixed resolution, as the server).
    """
    metrics = [m["name"] for m in table["metrics"]]
    dataset_ids = [d["id"] for d in table["datasets"]]
    model_ids = sorted(row["model_id"] for row in table["rows"])
    scores: dict[int, dict[str, dict]] = {pk: {} for pk in model_ids}
    spreads: dict[int, dict[str, dict]] = {pk: {} for pk in model_ids}
    if dataset_ids and model_ids:
        done = Score.objects.filter(
            model_id__in=model_ids, dataset_id__in=dataset_ids, status=Score.Status.DONE
        ).only("model_id", "dataset_id", "perf", "metrics")
        for s in done:
            scores[s.model_id][str(s.dataset_id)] = score_values(s, metrics)
            spread = measured_spreads(s.metrics)
            if spread:
                spreads[s.model_id][str(s.dataset_id)] = spread
    unmeasurable = {row["model_id"]: row.get("not_measurable") or {} for row in table["rows"]}
    return {
        "metrics": metrics,
        "memory_ceiling": table["memory_ceiling"],
        "tie_tolerance": TIE_TOLERANCE,
        "sort_decimals": SORT_DECIMALS,
        "resolution_slack": RESOLUTION_SLACK,
        "resolutions": {
            j: {"absolute": r.absolute, "relative": r.relative, "measured": r.measured}
            for j, r in RESOLUTIONS.items()
        },
        "default_metric_weights": {j: float(default_metric_weights.get(j, 1.0)) for j in metrics},
        "datasets": [str(pk) for pk in dataset_ids],
        "dataset_names": {str(d["id"]): d["name"] for d in table["datasets"]},
        "models": [
            {"id": pk, "not_measurable": unmeasurable[pk], "scores": scores[pk], "spreads": spreads[pk]}
            for pk in model_ids
        ],
    }
