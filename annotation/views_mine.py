"""The annotator's list of their own examples ("My examples")."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.shortcuts import render

from . import selectors
from .models import Prediction

MY_EXAMPLES_PER_PAGE = 50


@login_required
def my_examples(request):
    """The requester's own examples, newest first, 50 a page, each linking to its outcome page."""
    examples = (
        selectors.own_examples(request.user)
        .prefetch_related(Prefetch("predictions", queryset=Prediction.objects.order_by("id")))
        .order_by("-created_at", "-id")
    )
    page = Paginator(examples, MY_EXAMPLES_PER_PAGE).get_page(request.GET.get("page"))
    rows = []
    for example in page:
        fields = example.round.task.cfg.input_fields
        target = example.target
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
    return render(request, "annotation/my_examples.html", {"page": page, "rows": rows})
