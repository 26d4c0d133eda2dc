"""``GET /examples/<pk>/why/``: why the target model(s) decided as they did on an example.

Token attributions by integrated gradients (``engine.explain.attributions``, docs/attributions.md),
computed on demand (never on the create path) and cached by the registry (model, files, label, text).
Visible to the example's author and the task's owners (``selectors.examples_visible_to``); 404 otherwise.

A request sent by ``annotation/static/annotation/why.js`` (header ``X-Requested-With: fetch``) gets the
fragment alone (``annotation/_why_fragment.html``), to put inside the ``<details>`` of ``_why.html``;
any other request (the link of the page without JavaScript) a full page around the same fragment.

The probability the explanation states for the attributed label is the served prediction's, the one the
verdict shows (``served_figures``). Attributions are computed on the model's PyTorch weights (integrated
gradients need gradients); when the prediction was served on another runtime (an ONNX graph, fp32 or
int8), the explanation says so and gives the PyTorch figure its other numbers come from.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET

from models_registry import serving
from tasks.kinds import span_answers

from . import selectors

FRAGMENT_HEADER = "X-Requested-With"
FRAGMENT_VALUE = "fetch"


#: The runtime attributions are computed on (``engine.explain.attributions``: integrated
#: gradients on the PyTorch weights).
ATTRIBUTIONS_RUNTIME = serving.TORCH


def served_figures(prediction, label: str) -> dict | None:
    """What the served model gave ``label`` on the example: ``{"probability": 0..1, "percent": "61.5"
    (one decimal, as the verdict shows it), "runtime": the prediction's runtime, "runtime_label": its
    display name ("ONNX Runtime, int8 weights"), "other_runtime": True when it is known and not the one
    attributions are computed on}``.

    Args:
        prediction: an answered ``Prediction`` (its stored ``output`` and ``runtime``).
        label: the attributed label.

    Returns:
        The dict, or None when the stored output has no numeric probability for ``label``.
    """
    probabilities = prediction.output.get("probabilities") if isinstance(prediction.output, dict) else None
    value = probabilities.get(label) if isinstance(probabilities, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    runtime = prediction.runtime or ""
    return {
        "probability": float(value),
        "percent": f"{100 * float(value):.1f}",
        "runtime": runtime,
        "runtime_label": serving.runtime_label(runtime) if runtime else "",
        # A blank runtime (a prediction stored before runtimes were recorded) is not known to differ.
        "other_runtime": bool(runtime) and runtime != ATTRIBUTIONS_RUNTIME,
    }


def explanations_for(example) -> list[dict]:
    """One ``{"model": display name, "label": its answer, "explanation": Explanation, "served":
    served_figures(prediction, attributed label) or None}`` per answered prediction of ``example``
    (creation order); the answered label is the attributed target.

    A span (QA) task or a remote model gives an ``Explanation`` with ``unavailable`` set (and no
    ``served``); never raises for a model's failure (``serving.explain``).
    """
    rows = []
    span_task = span_answers(example.round.task.cfg)
    for prediction in example.predictions.all():
        if prediction.status != "ok":
            continue
        model = prediction.model
        name = model.public_name
        served = None
        if span_task:
            explanation = serving.Explanation(unavailable=serving.NOT_EXPLAINED_SPAN)
        else:
            label = prediction.label if prediction.label in model.task.cfg.labels else None
            [explanation] = serving.explain(model, [example.model_input], targets=[label])
            if explanation.available:
                served = served_figures(prediction, explanation.target_label)
        rows.append({"model": name, "label": prediction.label, "explanation": explanation, "served": served})
    return rows


@login_required
@require_GET
def why(request, pk: int):
    """The attributions of each model that answered the example, as a fragment or a full page."""
    example = get_object_or_404(
        selectors.with_predictions(selectors.examples_visible_to(request.user)), pk=pk
    )
    context = {"example": example, "task": example.round.task, "rows": explanations_for(example)}
    fragment = request.headers.get(FRAGMENT_HEADER) == FRAGMENT_VALUE
    template = "annotation/_why_fragment.html" if fragment else "annotation/why.html"
    response = render(request, template, context)
    patch_vary_headers(response, [FRAGMENT_HEADER])
    return response
