"""The generative leaderboard's page (``generative_board``): weights from the query string, no JavaScript
needed (the form's Update button recomputes on the server)."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render

from leaderboards.kinds import rules_for
from tasks.selectors import task_or_404

from .board import BoardError, BoardParams, generative_board, params_from


def _text(metric: str, value) -> str:
    """A figure as the table shows it: rates as percentages, seconds with "s", others to 2 decimals."""
    if value is None:
        return ""
    if metric == "perf" or metric.startswith("asr_"):
        return f"{100 * value:.1f}%"
    if metric == "bt":
        return f"{value:.0f}"
    if metric == "first_token":
        return f"{value:.2f} s"
    if metric == "cost":
        return f"{value:.4f}"
    return f"{value:.2f}"


def _interval(row: dict, number: int, metric: str) -> str:
    """ " [12–30%, 40 people]": a rate's 95% interval across people in a round, as the board's detail
    line writes it; "" without one (not an attack success rate, nothing judged, under 5 people)."""
    figures = (row.get("across_people") or {}).get(number, {}).get(metric)
    if not figures or not figures.get("interval"):
        return ""
    low, high = figures["interval"]
    return f" [{100 * low:.0f}–{100 * high:.0f}%, {figures['people']} people]"


def present(board: dict) -> dict:
    """``board`` with each row's ``cells``: per metric, ``text``, ``detail`` (per-round values, or the
    Bradley-Terry interval and votes) and ``untrusted`` (a judge below its floor: greyed); and
    ``left_out_rows``: ``[(label, reason)]`` of the metrics left out of the Dynascore, named by label."""
    labels = {m["name"]: m["label"] for m in board["metrics"]}
    board["left_out_rows"] = [(labels.get(j, j), why) for j, why in board.get("left_out", {}).items()]
    per_round_metrics = {"perf", "asr_people"} | {m["name"] for m in board["metrics"] if m["judge"]}
    for row in board["rows"]:
        cells = []
        for m in board["metrics"]:
            name = m["name"]
            detail = ""
            if name in per_round_metrics and len(row["per_round"]) > 1:
                detail = " · ".join(
                    f"R{n} {_text(name, v.get(name)) or '–'}{_interval(row, n, name)}"
                    for n, v in row["per_round"].items()
                )
            elif name in per_round_metrics and row["per_round"]:
                [number] = row["per_round"]
                detail = _interval(row, number, name).strip()
            elif name == "bt" and row["bt_interval"]:
                low, high = row["bt_interval"]
                detail = f"[{low:.0f}, {high:.0f}] · {row['bt_votes']} votes"
            cells.append(
                {
                    "text": _text(name, row["values"].get(name)),
                    "detail": detail,
                    "untrusted": not m["trusted"],
                }
            )
        row["cells"] = cells
    return board


def generative_leaderboard(request, slug: str):
    """``/tasks/<slug>/leaderboard/generative/``: the red-teaming task's models ranked by the Dynascore
    over accuracy, attack success rates, Bradley-Terry and speed; 404 for other tasks."""
    task = task_or_404(slug)
    if not rules_for(task.cfg).generative:
        raise Http404("not a red-teaming task")
    error = ""
    try:
        params = params_from(request.GET)
    except BoardError as exc:
        error, params = str(exc), BoardParams({}, {})
    board = present(generative_board(task, request.user, params))
    return render(
        request,
        "leaderboards/generative_board.html",
        {"task": task, "board": board, "query_error": error},
        status=400 if error else 200,
    )
