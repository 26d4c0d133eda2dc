"""``GET /examples/<pk>/why/``: why the target model(s) decided as they did on an example.

Token attributions by integrated gradients (``models_registry.explain.attributions``, docs/attributions.md),
computed on demand (never on the create path) and cached by the registry (model, files, label, text).
Visible to the example's author and the task's owners (``selectors.examples_visible_to``); 404 otherwise.

A request sent by ``annotation/static/annotation/why.js`` (header ``X-Requested-With: fetch``) gets the
fragment alone (``annotation/_why_fragment.html``), to put inside the ``<details>`` of ``_why.html``;
any other request (the link of the page without JavaScript) a full page around the same fragment.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET

from models_registry.explain import attributions

from . import selectors

FRAGMENT_HEADER = "X-Requested-With"
FRAGMENT_VALUE = "fetch"


def explanations_for(example) -> list[dict]:
    """One ``{"model": display name, "label": its answer, "explanation": Explanation}`` per answered
    prediction of ``example`` (creation order); the answered label is the attributed target.

    A span (QA) task or a remote model gives an ``Explanation`` with ``unavailable`` set; never raises
    for a model's failure (``attributions.explain``).
    """
    rows = []
    span_task = example.round.task.cfg.target_field.get("type") == "context_span"
    for prediction in example.predictions.all():
        if prediction.status != "ok":
            continue
        model = prediction.model
        name = "Anonymous model" if model.is_anonymous else model.name
        if span_task:
            explanation = attributions.Explanation(unavailable=attributions.SPAN)
        else:
            label = prediction.label if prediction.label in model.task.cfg.labels else None
            [explanation] = attributions.explain(model, [example.model_input], targets=[label])
        rows.append({"model": name, "label": prediction.label, "explanation": explanation})
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
