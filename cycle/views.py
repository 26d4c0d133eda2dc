"""A round's public page: ``/tasks/<slug>/rounds/<n>/``, with its artefact probes against chance and
against the earlier rounds (``cycle.probes``)."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render

from core.text_rules import ascii_id
from cycle.kinds import rules_for
from tasks.models import Round
from tasks.selectors import contexts_without_room, task_or_404

from .probes.selectors import last_run, round_probe_views


def round_detail(request, slug: str, number: str):
    """The round ``number`` of the active task ``slug``; an unknown task or round, or a malformed number,
    is a 404."""
    task = task_or_404(slug)
    parsed = ascii_id(number)
    round_ = Round.objects.filter(task=task, number=parsed).first() if parsed else None
    if round_ is None:
        raise Http404("No such round.")
    probes = round_probe_views(round_)
    pending = max(((v.probe.details or {}).get("pending", 0) for v in probes if v.probe), default=0)
    return render(
        request,
        "cycle/round_detail.html",
        {
            "task": task,
            "round": round_,
            "is_open": round_.is_open,
            "probes": probes,
            "probes_run_at": last_run(probes),
            "pending": pending,
            "generative": rules_for(task.cfg).generative,
            "contexts": round_.contexts.count(),
            "contexts_without_room": contexts_without_room(round_),
        },
    )
