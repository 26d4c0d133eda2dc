"""Presentation of a leaderboard table dict (``selectors.build_leaderboard``) for the templates.

Turns the JSON-ready table (live or from a snapshot) into header cells (with sort links) and row
cells with formatted numbers, since templates cannot look values up by a computed key.
"""

from __future__ import annotations

import math
from urllib.parse import urlencode

from .fairness_flags import FLAG_TEXT, TARGET, TRAINED

PERCENT_METRICS = {"perf", "fairness", "robustness"}


#: The mark a flagged cell shows (``fairness_flags``): T for a target of the round, D for trained on its data.
FLAG_MARK = {TARGET: "T", TRAINED: "D"}


def format_metric(metric: str, value) -> str:
    """A metric value for display: rates as percentages, throughput in examples/s, memory in GiB."""
    if value is None:
        return "–"
    if metric in PERCENT_METRICS:
        return f"{value:.1%}"
    if metric == "throughput":
        return f"{value:,.1f}"
    if metric == "memory":
        return f"{value:.2f}"
    return f"{value:.4g}"


def spread_text(spread, value) -> str:
    """The measured spread beside a metric cell: ``"range 9%"`` for an aggregated spread u of 9% of the
    value (``dynascore.ModelResult.spread``: the timed passes' (max - min) / median, in the metric's
    unit); "" when either is unknown or the value is 0. Rounded half up, as ``live_ranking.js``."""
    if not isinstance(spread, int | float) or not isinstance(value, int | float) or value <= 0:
        return ""
    return f"range {math.floor(100 * spread / value + 0.5)}%"


def format_amrs(value) -> str:
    """An AMRS value (None: undefined)."""
    return "undefined" if value is None else f"{value:.4g}"


def weights_query(table: dict) -> dict[str, str]:
    """The query parameters that reproduce the table's weights and round (no sort)."""
    query = {f"w_{j}": weight_text(w) for j, w in table["metric_weights"].items()}
    query.update({f"d_{d['id']}": weight_text(d["weight"]) for d in table["datasets"]})
    if table.get("round") is not None:
        query["round"] = str(table["round"])
    return query


def weight_text(value: float) -> str:
    """A weight as the shortest text that reads back as the same float (``repr``), without a trailing
    ``.0``: 0.1234567 -> "0.1234567", 1e-05 -> "1e-05", 4.0 -> "4". Used in links and form inputs, so
    re-submitting or re-sorting a view never rounds its weights (``:g`` kept 6 digits)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def present(table: dict, base_url: str | None = None) -> dict:
    """Header and row cells for ``leaderboards/_table.html``.

    Args:
        table: ``build_leaderboard``'s dict.
        base_url: the page URL for sort links (None: a snapshot, no links).
    """
    query = weights_query(table)
    metric_label = {m["name"]: m["label"] for m in table["metrics"]}
    columns = [("model", "Model", "name"), ("dynascore", "Dynascore", "num")]
    columns += [(m["name"], metric_label[m["name"]], "num") for m in table["metrics"]]
    columns += [(f"d{d['id']}", f"{d['name']} (perf)", "num dataset") for d in table["datasets"]]
    header = []
    for key, label, css in columns:
        active = table["sort"] == key
        url = None
        if base_url is not None:
            direction = ("asc" if table["dir"] == "desc" else "desc") if active else _default_dir(key)
            url = f"{base_url}?{urlencode({**query, 'sort': key, 'dir': direction})}"
        header.append(
            {
                "key": key,
                "label": label,
                "css": css,
                "url": url,
                "active": active,
                "arrow": ("▼" if table["dir"] == "desc" else "▲") if active else "",
            }
        )
    rows = []
    for row in table["rows"]:
        cells = [
            {"text": "–" if row["dynascore"] is None else f"{row['dynascore']:.4f}", "css": "num"},
        ]
        unmeasurable = row.get("not_measurable") or {}
        for m in table["metrics"]:
            value = row["metrics"].get(m["name"])
            if value is None and m["name"] in unmeasurable:
                cells.append(
                    {"text": "not measurable", "css": "num missing", "title": unmeasurable[m["name"]]}
                )
            else:
                cell = {"text": format_metric(m["name"], value), "css": "num"}
                spread = spread_text((row.get("spread") or {}).get(m["name"]), value)
                if spread:
                    cell["spread"] = spread
                cells.append(cell)
        for d in table["datasets"]:
            value = row["datasets"].get(str(d["id"]))
            status = row.get("statuses", {}).get(str(d["id"]))
            if value is not None:
                text, css = format_metric("perf", value), "num"
            else:
                text, css = (status if status and status != "done" else "no score"), "num missing"
            cell = {"text": text, "css": css}
            kinds = (row.get("flags") or {}).get(str(d["id"]))
            if kinds:
                # A mark, its meaning in words for screen readers, and the same in the title.
                cell.update(
                    css=f"{css} flagged",
                    flag=" ".join(FLAG_MARK[k] for k in kinds),
                    flag_text="; ".join(FLAG_TEXT[k] for k in kinds),
                    title="Built against this model: " + "; ".join(FLAG_TEXT[k] for k in kinds),
                )
            cells.append(cell)
        fair_rank = row.get("rank_without_flagged")
        rows.append({**row, "cells": cells, "fair_rank_text": "–" if fair_rank is None else str(fair_rank)})
    amrs = [
        {
            "metric": m["name"],
            "label": m["label"],
            "amrs": format_amrs(table["amrs"].get(m["name"])),
            "pairs": table.get("pairs_used", {}).get(m["name"]),
            "weight": table["metric_weights"].get(m["name"]),
            "weight_text": weight_text(table["metric_weights"].get(m["name"], 0.0)),
            "normalised": table.get("normalised_metric_weights", {}).get(m["name"]),
            "left_out": table["left_out"].get(m["name"], ""),
        }
        for m in table["metrics"]
    ]
    dataset_inputs = [{**d, "weight_text": weight_text(d["weight"])} for d in table["datasets"]]
    return {
        "header": header,
        "rows": rows,
        "amrs": amrs,
        "query": query,
        "datasets": dataset_inputs,
        # Snapshots frozen before the fairness flags existed have none of these keys.
        "flagged": table.get("flagged", False),
        "kendall_tau": [
            {**a, "tau_text": "undefined" if a["tau"] is None else f"{a['tau']:.2f}"}
            for a in table.get("kendall_tau", [])
        ],
        "flag_legend": [(FLAG_MARK[k], FLAG_TEXT[k]) for k in FLAG_TEXT],
    }


def _default_dir(key: str) -> str:
    return "asc" if key in ("model", "memory") else "desc"
