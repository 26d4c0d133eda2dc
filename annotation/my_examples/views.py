"""The annotator's list of their own examples ("My examples"), with filters and a summary line."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.shortcuts import render

from .. import selectors
from ..models import Prediction
from ..red_team import presenting as red_team_presenting
from .filters import MyExamplesFilter, summary

MY_EXAMPLES_PER_PAGE = 50


@login_required
def my_examples(request):
    """The requester's own examples, newest first, 50 a page, each linking to its outcome page.

    The GET form filters by task, round, status and whether the model was fooled
    (``annotation.my_examples.filters.MyExamplesFilter``); the summary line counts the filtered examples
    (``filters.summary``); the page links keep the filters. Filters that do not validate are
    shown with their messages, and no rows (the list is not silently unfiltered).
    """
    own = selectors.own_examples(request.user)
    filterset = MyExamplesFilter(request.GET or None, queryset=own, request=request)
    valid = filterset.is_valid() if filterset.is_bound else True
    filtered = filterset.qs if filterset.is_bound and valid else (own if valid else own.none())
    examples = filtered.prefetch_related(
        Prefetch("predictions", queryset=Prediction.objects.order_by("id"))
    ).order_by("-created_at", "-id")
    page = Paginator(examples, MY_EXAMPLES_PER_PAGE).get_page(request.GET.get("page"))
    rows = []
    for example in page:
        fields = example.round.task.cfg.input_fields
        target = example.target
        if red_team_presenting.mode_of(example):
            text, intended, model_answer = red_team_presenting.list_texts(example)
            rows.append({"example": example, "text": text, "target": intended, "model_labels": model_answer})
            continue
        rows.append(
            {
                "example": example,
                "text": example.inputs.get(fields[0]["name"], "") if fields else "",
                "target": target.get("answer", "") if isinstance(target, dict) else target,
                "model_labels": ", ".join(
                    p.label for p in example.predictions.all() if p.status == Prediction.Status.OK
                ),
            }
        )
    return render(
        request,
        "annotation/my_examples.html",
        {
            "page": page,
            "rows": rows,
            "filter": filterset,
            "filter_errors": [] if valid else [f"{k}: {' '.join(v)}" for k, v in filterset.errors.items()],
            "summary": summary(filtered) if valid else None,
            "has_any": own.exists() if filterset.is_filtered or not valid else bool(rows),
        },
    )
