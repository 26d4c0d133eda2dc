"""The leaderboard page (live, per fork, frozen snapshots) and a model's page with its interact box."""

from __future__ import annotations

import math
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.models import AnonymousUser
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.exceptions import Throttled

from leaderboards.kinds import rules_for
from models_registry import selectors as registry_selectors
from models_registry import serving
from models_registry.models import RegisteredModel
from models_registry.serving import clean_output, runtime_label
from models_registry.throttling import ExplainThrottle
from tasks.models import Task
from tasks.selectors import task_or_404

from . import selectors
from .charts import bar_chart
from .forks import ForkNameTakenError, LeaderboardPermissionError, freeze_snapshot, save_fork
from .forms import ForkForm, InteractForm, NameForm, parse_leaderboard_query, refusal, view_query
from .live_ranking import live_payload
from .model_page import metric_figures, overall_for_tags, tag_name
from .models import LeaderboardFork, LeaderboardSnapshot, Score
from .tables import present


def _defaults(task, fork: LeaderboardFork | None = None) -> tuple[dict[str, float], dict[int, float]]:
    """The metric and dataset weights a query without them gets: the task's, or the fork's."""
    defaults = selectors.default_metric_weights(task)
    dataset_defaults = {}
    if fork is not None:
        defaults.update({k: float(v) for k, v in fork.metric_weights.items() if k in defaults})
        dataset_defaults = {int(k): float(v) for k, v in fork.dataset_weights.items() if str(k).isdigit()}
    return defaults, dataset_defaults


def _params(request, task, fork: LeaderboardFork | None = None, query=None):
    defaults, dataset_defaults = _defaults(task, fork)
    return parse_leaderboard_query(
        request.GET if query is None else query,
        task=task,
        default_metric_weights=defaults,
        default_dataset_weights=dataset_defaults,
    )


#: The weight sliders run from 0 to this (or to the weight itself when it is larger).
SLIDER_MAX = 10


def _slider_max(weight: float | None) -> str:
    return str(max(SLIDER_MAX, math.ceil(weight or 0)))


def _render_leaderboard(request, task: Task, fork: LeaderboardFork | None = None):
    params, _ = _params(request, task, fork)
    table = selectors.build_leaderboard(task, request.user, params, fork=fork)
    base_url = (
        reverse("leaderboards:fork", args=[task.slug, fork.slug])
        if fork
        else reverse("leaderboards:leaderboard", args=[task.slug])
    )
    view = present(table, base_url)
    for entry in [*view["amrs"], *view["datasets"]]:
        entry["slider_max"] = _slider_max(entry["weight"])
    return render(
        request,
        "leaderboards/leaderboard.html",
        {
            "task": task,
            "generative": rules_for(task.cfg).generative,
            "table": table,
            "view": view,
            # The scores behind the table, for the sliders' live re-ranking (live_ranking.js).
            "live": live_payload(table, default_metric_weights=_defaults(task, fork)[0]),
            "base_url": base_url,
            "query_messages": params.messages,
            "rounds": selectors.rounds_with_scoring_datasets(task),
            "fork": fork,
            "forks": selectors.forks_of(task),
            "snapshots": selectors.snapshots_of(task)[:20],
            "is_owner": selectors.is_task_owner(request.user, task),
            "name_form": NameForm(),
        },
    )


def leaderboard(request, slug: str):
    """The task's leaderboard: weights, sort and round from the query string (``forms`` docstring)."""
    return _render_leaderboard(request, task_or_404(slug))


def fork_detail(request, slug: str, fork_slug: str):
    """The leaderboard with a saved weight set as its defaults (the query string still overrides)."""
    task = task_or_404(slug)
    try:
        fork = selectors.fork_of(task, fork_slug)
    except LeaderboardFork.DoesNotExist:
        raise Http404("No such saved weight set.") from None
    return _render_leaderboard(request, task, fork)


@require_POST
def fork_create(request, slug: str):
    """Save the weights posted (same names as the query string) under a name; task owners only."""
    task = task_or_404(slug)
    if not selectors.is_task_owner(request.user, task):
        raise Http404("No such page.")
    form = ForkForm(request.POST)
    params, _ = _params(request, task, query=request.POST)
    if not form.is_valid():
        return _redirect_with_error(request, task, "A saved weight set needs a name (up to 200 characters).")
    if params.messages:  # a bad weight is refused, not silently saved as the default
        return _redirect_with_error(request, task, refusal("The weight set", params.messages), request.POST)
    try:
        fork = save_fork(
            task=task,
            name=form.cleaned_data["name"],
            metric_weights=params.metric_weights,
            dataset_weights=params.dataset_weights,
            user=request.user,
            replace=form.cleaned_data["replace"],
        )
    except LeaderboardPermissionError:
        raise Http404("No such page.") from None
    except ForkNameTakenError as exc:
        return _redirect_with_error(request, task, str(exc), request.POST)
    return redirect("leaderboards:fork", task.slug, fork.slug)


@require_POST
def snapshot_create(request, slug: str):
    """Freeze the table for the posted weights, as a visitor who is not logged in sees it; owners only."""
    task = task_or_404(slug)
    if not selectors.is_task_owner(request.user, task):
        raise Http404("No such page.")
    form = NameForm(request.POST)
    if not form.is_valid():
        return _redirect_with_error(request, task, "A snapshot needs a name (up to 200 characters).")
    params, _ = _params(request, task, query=request.POST)
    if params.messages:
        return _redirect_with_error(request, task, refusal("The snapshot", params.messages), request.POST)
    # Computed as the public sees it, so a snapshot never shows unpublished models or anonymous names.
    table = selectors.build_leaderboard(task, AnonymousUser(), params)
    try:
        snapshot = freeze_snapshot(task=task, name=form.cleaned_data["name"], table=table, user=request.user)
    except LeaderboardPermissionError:
        raise Http404("No such page.") from None
    return redirect("leaderboards:snapshot", task.slug, snapshot.pk)


def _redirect_with_error(request, task, message, posted=None):
    """Back to the leaderboard with ``message``; with ``posted``, showing the posted weights again."""

    messages.error(request, message)
    url = reverse("leaderboards:leaderboard", args=[task.slug])
    query = view_query(posted) if posted is not None else {}
    return redirect(f"{url}?{urlencode(query)}" if query else url)


def snapshot_detail(request, slug: str, pk: int):
    """A frozen leaderboard, exactly as stored."""
    task = task_or_404(slug)
    try:
        snapshot = selectors.snapshot_of(task, pk)
    except LeaderboardSnapshot.DoesNotExist:
        raise Http404("No such snapshot.") from None
    return render(
        request,
        "leaderboards/snapshot.html",
        {"task": task, "snapshot": snapshot, "table": snapshot.data, "view": present(snapshot.data)},
    )


@require_http_methods(["GET", "POST"])
def model_detail(request, pk: int):
    """A model's page: card, scores per dataset, per-tag table and plot, and the interact box (POST).

    404 for a model the user may not see (unpublished, not theirs, not their task's).
    """
    try:
        model = registry_selectors.model_visible_to(request.user, pk)
    except RegisteredModel.DoesNotExist:
        raise Http404("No such model.") from None
    identity = registry_selectors.sees_real_identity(request.user, model)
    cfg = model.task.cfg
    form, prediction, error, explanation = InteractForm(cfg), None, "", None
    if request.method == "POST":
        if not request.user.is_authenticated:
            error = "Log in to try the model."
        else:
            form = InteractForm(cfg, request.POST)
            if model.status != RegisteredModel.Status.READY:
                error = f"This model is not ready ({model.get_status_display().lower()}); it cannot answer."
            elif form.is_valid():
                prediction, error = _predict(model, form.inputs())
                explanation = _explain(request, model, form.inputs(), prediction)
    scores = selectors.model_scores(request.user, model)
    score_rows = [_score_view(s) for s in scores]
    return render(
        request,
        "leaderboards/model_detail.html",
        {
            "model": model,
            "task": model.task,
            "name": selectors.display_name(request.user, model),
            "identity": identity,
            "card": _card(model, identity),
            # What produced its latest stored answer (a generative model's; engine.runtime.provenance).
            "provenance": selectors.latest_provenance(model) if identity else None,
            "scores": score_rows,
            "previous_runtimes": _previous_runtimes(score_rows),
            "tag_sections": _tag_sections(scores, cfg.perf_metric),
            "form": form,
            "prediction": prediction,
            "interact_error": error,
            "explanation": explanation,
        },
    )


def _explain(request, model: RegisteredModel, inputs: dict, prediction: dict | None):
    """Token attributions of the interact box's answer (``engine.explain.attributions``), or None when
    there is no answer or the task is extractive QA; a remote model's says no explanation is available.
    Counted against the caller's explanation rate like the API's (``DYNABENCH_EXPLAIN_RATE``): over it,
    the answer comes without its explanation and says why."""
    if prediction is None or not rules_for(model.task.cfg).explained:
        return None
    try:
        ExplainThrottle().charge(request, 1)
    except Throttled as exc:
        return serving.Explanation(unavailable=f"{exc.detail} Try again in {exc.wait:.0f} s.")
    label = prediction["label"] if prediction["label"] in model.task.cfg.labels else None
    return serving.explain(model, [inputs], targets=[label])[0]


def _predict(model: RegisteredModel, inputs: dict):
    """(prediction with probabilities sorted high to low, "") or (None, a message); never raises."""
    try:
        output = clean_output(serving.predict(model, [inputs])[0])
        if "answer" in output:  # a span (QA) model: its answer and score
            return {
                "label": str(output["answer"]),
                "probabilities": [("score", float(output.get("score", 0)))],
            }, ""
        probabilities = sorted(
            ((label, float(p)) for label, p in (output.get("probabilities") or {}).items()),
            key=lambda item: -item[1],
        )
        return {"label": str(output["label"]), "probabilities": probabilities}, ""
    except serving.InferenceError as exc:
        return None, f"The model could not answer: {exc}"
    except Exception as exc:  # a model's output we cannot read must not be a 500
        return None, f"The model could not answer ({type(exc).__name__})."


def _card(model: RegisteredModel, identity: bool) -> dict:
    card = model.card or {}
    paper = next((card.get(k) for k in ("paper_url", "paper_link", "paper") if card.get(k)), "")
    paper = paper if isinstance(paper, str) and paper.startswith(("https://", "http://")) else ""
    training = registry_selectors.card_training_text(model)
    figures = []
    for key, value in card.items():
        if key in CARD_FACTS_NOT_FIGURES:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            figures.append((key.replace("_", " "), value))
        elif isinstance(value, dict) and key != "training":
            figures += [
                (f"{key.replace('_', ' ')}: {k}", v)
                for k, v in value.items()
                if isinstance(v, int | float) and not isinstance(v, bool)
            ]
    # A target trained here: its test figures come from the leaderboard's evaluations, not the card.
    shown = {label for label, _ in figures}
    for slug, entry in selectors.card_test_figures(model).items():
        figures += [
            (f"{label}: {slug}", entry[key])
            for key, label in selectors.CARD_TEST_METRICS
            if key in entry and f"{label}: {slug}" not in shown
        ]
    return {
        "backbone": model.backbone or card.get("backbone", ""),
        "parameter_count": model.parameter_count,
        "parameter_count_text": "" if model.parameter_count is None else f"{model.parameter_count:,}",
        "licence": card.get("licence", ""),
        "training_data": training,
        "paper": paper if identity else "",
        "description": card.get("description", ""),
        "note": card.get("note", ""),
        "preprocessing": _preprocessing_text(card.get("preprocessing")),
        "target_round": card.get("target_round") if isinstance(card.get("target_round"), int) else None,
        "figures": figures,
    }


#: Numbers in a card that are facts, not measured figures: shown as card facts or not at all.
#: ``runtime`` is the ONNX export's check, shown in its own block (models_registry/_runtime.html).
CARD_FACTS_NOT_FIGURES = frozenset({"parameter_count", "seed", "preprocessing", "target_round", "runtime"})


def _preprocessing_text(spec) -> str:
    """A preprocessing spec as one line, version first, then by key (jsonb does not keep key order):
    ``{"emoji": "names", "version": 1}`` -> "version 1, emoji names"."""
    if not isinstance(spec, dict):
        return ""
    words = {True: "yes", False: "no", "": "none"}
    parts = []
    for key, value in sorted(spec.items(), key=lambda item: (item[0] != "version", str(item[0]))):
        shown = words.get(value, value) if isinstance(value, bool | str) else value
        parts.append(f"{str(key).replace('_', ' ')} {shown}")
    return ", ".join(parts)


def _score_view(score) -> dict:
    """One row of the model page's score table. A Score being measured again (pending or running, e.g.
    after its model's runtime changed) still holds the previous evaluation's figures: they are shown,
    marked as the previous ones (``previous``), with the runtime they were measured on."""
    previous = score.status in (Score.Status.PENDING, Score.Status.RUNNING) and bool(score.metrics)
    measured_on = score.metrics.get("runtime") if isinstance(score.metrics, dict) else None
    return {
        "dataset": score.dataset,
        "status": score.status,
        "perf": score.perf,
        # (label, formatted value with its unit), known figures first (model_page.METRIC_FIGURES).
        "metrics": metric_figures(score.metrics),
        "error": score.error_message,
        "previous": previous,
        "previous_runtime": runtime_label(measured_on) if previous and measured_on else "",
    }


def _previous_runtimes(rows: list[dict]) -> str | None:
    """For the one note above the score table: None when no row shows a previous evaluation's
    figures, else the runtimes they were measured on, joined ("" when none is known)."""
    if not any(row["previous"] for row in rows):
        return None
    return " and ".join(sorted({row["previous_runtime"] for row in rows if row["previous_runtime"]}))


def _tag_sections(scores, perf_metric: str = "") -> list[dict]:
    """Per dataset with a per-tag breakdown: rows (tag group, tag, its readable name, n, accuracy) and
    a bar chart with a dashed line at the whole dataset's figure (``model_page.overall_for_tags``)."""
    sections = []
    for s in scores:
        if not isinstance(s.per_tag, dict) or not s.per_tag:
            continue
        rows = []
        for tag, entry in s.per_tag.items():
            value = entry.get("accuracy") if isinstance(entry, dict) else entry
            n = entry.get("n") if isinstance(entry, dict) else None
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                continue
            group, _, name = str(tag).partition(":") if ":" in str(tag) else ("", "", str(tag))
            rows.append(
                {
                    "tag": str(tag),
                    "group": group,
                    "name": name,
                    "label": tag_name(group, name),
                    "accuracy": float(value),
                    "n": n,
                }
            )
        if not rows:
            continue
        rows.sort(key=lambda r: (r["group"], r["name"]))
        groups = sorted({r["group"] for r in rows})
        plotted = "functionality" if "functionality" in groups else groups[0]
        overall, overall_name = overall_for_tags(s.perf, s.metrics, perf_metric)
        chart = bar_chart(
            [(r["name"], r["accuracy"], r["n"]) for r in rows if r["group"] == plotted],
            title=f"Accuracy per {plotted or 'tag'} on {s.dataset.name}",
            names={r["name"]: r["label"] for r in rows if r["group"] == plotted},
            overall=overall,
            overall_label=f"overall {overall_name}" if overall_name else "overall",
        )
        sections.append(
            {
                "dataset": s.dataset,
                "rows": rows,
                "chart": chart,
                "plotted": plotted or "tag",
                "overall": s.perf,
                "overall_tags": overall,
                "overall_name": overall_name,
            }
        )
    return sections
