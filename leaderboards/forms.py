"""Reading the leaderboard's query string, and the small forms of the leaderboard and model pages.

The leaderboard's state lives in the URL so a view can be shared::

    ?w_perf=4&w_throughput=1&w_memory=1&w_fairness=1&w_robustness=1&d_12=5&d_13=1
     &sort=dynascore&dir=desc&round=2

``parse_leaderboard_query`` never raises: a bad value (not a number, negative, infinite, an unknown
dataset id, all weights zero, an unknown column or round) is replaced by its default and named in
``params.messages``, which the page shows.
"""

from __future__ import annotations

import math
import re

from django import forms

from core.text_rules import ascii_id, model_text_problem, normalise_newlines
from tasks.models import Task

from .models import Dataset
from .selectors import LeaderboardParams, leaderboard_metrics, rounds_with_scoring_datasets, scoring_datasets

MAX_WEIGHT = 1_000_000
#: Longer than any float's shortest repr (at most 24 characters) with room for typed zeros.
MAX_WEIGHT_CHARS = 100


def _weight(raw: str, label: str, messages: list[str]) -> float | None:
    try:
        # ASCII only and not absurdly long: float() also reads '١٢' (Arabic-Indic) and '1_0'.
        if not isinstance(raw, str) or not raw.isascii() or "_" in raw or len(raw) > MAX_WEIGHT_CHARS:
            raise ValueError(raw)
        value = float(raw)
    except (TypeError, ValueError):
        messages.append(f"The weight of {label} ({raw[:40]!r}) is not a number; the default is used.")
        return None
    if not math.isfinite(value) or value < 0 or value > MAX_WEIGHT:
        messages.append(
            f"The weight of {label} ({raw[:40]!r}) must be a number from 0 to {MAX_WEIGHT:,}; "
            "the default is used."
        )
        return None
    return value


def parse_leaderboard_query(
    query,
    *,
    task: Task,
    default_metric_weights: dict[str, float],
    default_dataset_weights: dict[int, float] | None = None,
) -> tuple[LeaderboardParams, list[Dataset]]:
    """Validate a leaderboard query (a ``QueryDict`` or dict of strings) against the task.

    Args:
        query: ``request.GET``.
        task: the task whose leaderboard is shown.
        default_metric_weights: metric -> weight when the query gives none (the task's, or a fork's).
        default_dataset_weights: dataset id -> weight (a fork's); datasets not in it default to 1.

    Returns:
        ``(params, datasets)``: the validated parameters and the scoring datasets shown (of the round
        asked for, or all).
    """
    messages: list[str] = []
    default_dataset_weights = default_dataset_weights or {}

    round_number = None
    raw_round = (query.get("round") or "").strip()
    if raw_round and raw_round != "all":
        available = rounds_with_scoring_datasets(task)
        if ascii_id(raw_round) in available:
            round_number = ascii_id(raw_round)
        else:
            messages.append(f"Round {raw_round[:20]!r} has no scoring dataset; showing all rounds.")
    datasets = scoring_datasets(task, round_number)
    metrics = leaderboard_metrics(task)

    metric_weights = {}
    for j in metrics:
        raw = query.get(f"w_{j}")
        value = None if raw in (None, "") else _weight(raw, j, messages)
        metric_weights[j] = default_metric_weights.get(j, 1.0) if value is None else value
    unknown_metrics = sorted(k[2:] for k in query if k.startswith("w_") and k[2:] not in metrics)
    if unknown_metrics:
        messages.append(f"Unknown metric(s) ignored: {', '.join(m[:40] for m in unknown_metrics[:10])}.")
    if not any(metric_weights.values()):
        messages.append("All metric weights are zero; the default metric weights are used.")
        metric_weights = {j: default_metric_weights.get(j, 1.0) for j in metrics}
        if not any(metric_weights.values()):
            metric_weights = {j: 1.0 for j in metrics}

    ids = {d.pk for d in datasets}
    all_ids = {d.pk for d in scoring_datasets(task)}
    dataset_weights = {d.pk: float(default_dataset_weights.get(d.pk, 1.0)) for d in datasets}
    unknown = []
    for key in query:
        if not key.startswith("d_"):
            continue
        suffix = key[2:]
        pk = ascii_id(suffix)
        if pk is None or pk not in all_ids:
            unknown.append(suffix[:40])
            continue
        if pk not in ids:
            continue  # a dataset of another round: kept in the URL, not used in this round's view
        raw = query.get(key)
        if raw in (None, ""):
            continue
        value = _weight(raw, f"dataset {pk}", messages)
        if value is not None:
            dataset_weights[pk] = value
    if unknown:
        messages.append(f"Unknown dataset id(s) ignored: {', '.join(unknown[:10])}.")
    if datasets and not any(dataset_weights.values()):
        messages.append("All dataset weights are zero; every dataset gets weight 1.")
        dataset_weights = {pk: 1.0 for pk in dataset_weights}

    columns = ["dynascore", "model", *metrics, *(f"d{d.pk}" for d in datasets)]
    sort = (query.get("sort") or "dynascore").strip()
    if sort not in columns:
        messages.append(f"Cannot sort by {sort[:40]!r}; sorted by Dynascore.")
        sort = "dynascore"
    default_dir = "asc" if sort in ("model", "memory") else "desc"
    direction = (query.get("dir") or default_dir).strip()
    if direction not in ("asc", "desc"):
        messages.append(f"Sort direction {direction[:20]!r} is not asc or desc; {default_dir} is used.")
        direction = default_dir
    params = LeaderboardParams(
        metric_weights=metric_weights,
        dataset_weights=dataset_weights,
        sort=sort,
        direction=direction,
        round_number=round_number,
        messages=messages,
    )
    return params, datasets


class NameForm(forms.Form):
    """The name of a fork or a snapshot (an owner's POST from the leaderboard page)."""

    name = forms.CharField(max_length=200, strip=True)

    def clean_name(self):
        name = self.cleaned_data["name"]
        if not name:
            raise forms.ValidationError("Give it a name.")
        return name


class ForkForm(NameForm):
    """A fork's name, and whether to replace the saved weight set of the same name (if any)."""

    replace = forms.BooleanField(required=False)


#: The query parameters that carry a leaderboard view (kept when a refused POST sends the owner back).
VIEW_PARAMETER = re.compile(r"(w_|d_)[^\s]{1,60}|round|sort|dir")


def view_query(query) -> dict[str, str]:
    """The weights, round and sort of a posted form (``request.POST``), to show the same view again."""
    return {k: str(query.get(k))[:100] for k in query if VIEW_PARAMETER.fullmatch(k)}


def refusal(what: str, messages: list[str]) -> str:
    """One message saying why ``what`` was not saved: each query message without its "default is used"
    part (``"The weight of memory ('nan') is not a number; the default is used."`` -> ``"... number."``).
    """
    reasons = " ".join(m.split(";")[0].rstrip(".") + "." for m in messages)
    return f"{what} was not saved. {reasons}"


class InteractForm(forms.Form):
    """The model page's interact box: one text per model input field of the task."""

    def __init__(self, cfg, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cfg = cfg
        specs = {f["name"]: f for f in cfg.context_fields + cfg.input_fields}
        #: Field name -> its length limit in code points, counted by clean().
        self.limits: dict[str, int] = {}
        for name in cfg.model_input_fields:
            spec = specs.get(name, {"name": name})
            limit = self.limits[name] = cfg.max_length_of(spec)
            self.fields[name] = forms.CharField(
                label=spec.get("label", name),
                # No max_length: it would add the textarea's maxlength, and a browser then cuts a longer
                # paste without a word (and counts emoji as two). clean() counts after CRLF -> LF.
                help_text=f"At most {limit:,} characters.",
                strip=False,
                required=False,
                widget=forms.Textarea(attrs={"rows": 3, "dir": "auto", "data-max-length": limit}),
            )

    def clean(self):
        data = super().clean()
        for name in self.cfg.model_input_fields:
            value = normalise_newlines(data.get(name) or "")
            if name in self.fields and name not in self.errors:
                if not value.strip():
                    self.add_error(name, "Type some text for the model.")
                elif problem := model_text_problem(value, self.fields[name].label, self.limits[name]):
                    self.add_error(name, problem)
            data[name] = value
        return data

    def inputs(self) -> dict:
        """The input dict the model reads (field name -> text)."""
        return {name: self.cleaned_data[name] for name in self.cfg.model_input_fields}
