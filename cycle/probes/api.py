"""``GET /api/tasks/{slug}/rounds/{n}/probes/``: a round's artefact probes (``selectors.round_probe_views``),
public for an active task.

The body has ``task``, ``round``, ``applicable`` (false for a red-teaming task) and ``probes``, one per
kind (``input_only``, then ``author``): ``status`` (``done``, ``not_measurable``, ``not_applicable``,
``failed``, or ``not_run`` before the first run), the figures (``accuracy``, ``chance``, ``margin`` =
accuracy − chance, all in [0, 1] or null; ``interval``, the Wilson 95% interval of the accuracy; ``n``,
``n_classes``, ``folds``), ``verdict`` and ``error`` in words, ``details`` as stored (no author is
named) and ``history``: the same probe on every round up to this one. An unknown task or round is 404.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.lookups import positive_int_or_404
from cycle.kinds import rules_for
from models_registry.serializers import ModelErrorSerializer
from tasks.api import NUMBER, SLUG
from tasks.models import Round
from tasks.selectors import task_or_404

from .selectors import ProbeView, round_probe_views

NOT_RUN = "not_run"


class ProbeHistorySerializer(serializers.Serializer):
    round = serializers.IntegerField()
    status = serializers.CharField()
    accuracy = serializers.FloatField(allow_null=True)
    chance = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()


class ProbeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["input_only", "author"])
    title = serializers.CharField()
    question = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["done", "not_measurable", "not_applicable", "failed", NOT_RUN],
        help_text="not_run: the round's probes have not been measured yet.",
    )
    accuracy = serializers.FloatField(allow_null=True, help_text="Cross-validated accuracy, in [0, 1].")
    chance = serializers.FloatField(allow_null=True, help_text="The most frequent class's share, in [0, 1].")
    margin = serializers.FloatField(allow_null=True, help_text="accuracy - chance.")
    interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="[low, high]: the Wilson 95% interval of the accuracy.",
    )
    n = serializers.IntegerField(help_text="Examples the probe was trained and tested on.")
    n_classes = serializers.IntegerField(help_text="Labels, or authors, among them.")
    folds = serializers.IntegerField(help_text="Cross-validation folds (k).")
    verdict = serializers.CharField(help_text="The accuracy against chance in words, or why not measured.")
    error = serializers.CharField(allow_blank=True)
    details = serializers.JSONField(help_text="Fields read, left-out counts, top words per label, ...")
    created_at = serializers.DateTimeField(allow_null=True)
    history = ProbeHistorySerializer(many=True)


class RoundProbesSerializer(serializers.Serializer):
    task = serializers.CharField()
    round = serializers.IntegerField()
    applicable = serializers.BooleanField(help_text="False for a red-teaming task.")
    probes = ProbeSerializer(many=True)


def probe_body(view: ProbeView) -> dict:
    """One ``ProbeView`` as the API's ``ProbeSerializer`` body."""
    probe = view.probe
    return {
        "kind": view.kind,
        "title": view.title,
        "question": view.question,
        "status": probe.status if probe else NOT_RUN,
        "accuracy": probe.accuracy if probe else None,
        "chance": probe.chance if probe else None,
        "margin": view.margin,
        "interval": view.interval,
        "n": probe.n if probe else 0,
        "n_classes": probe.n_classes if probe else 0,
        "folds": probe.folds if probe else 0,
        "verdict": view.verdict,
        "error": probe.error if probe else "",
        "details": (probe.details or {}) if probe else {},
        "created_at": probe.created_at if probe else None,
        "history": [
            {
                "round": h.round_number,
                "status": h.status,
                "accuracy": h.accuracy,
                "chance": h.chance,
                "n": h.n,
            }
            for h in view.history
        ],
    }


class RoundProbesView(APIView):
    """A round's artefact probes against chance and against the earlier rounds. Public."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Read a round's artefact probes",
        parameters=[SLUG, NUMBER],
        responses={200: RoundProbesSerializer, 404: ModelErrorSerializer},
    )
    def get(self, request, slug: str, number: str):
        task = task_or_404(slug)
        round_ = Round.objects.filter(task=task, number=positive_int_or_404(number, what="round")).first()
        if round_ is None:
            raise Http404("No such round.")
        body = {
            "task": task.slug,
            "round": round_.number,
            "applicable": not rules_for(task.cfg).generative,
            "probes": [probe_body(view) for view in round_probe_views(round_)],
        }
        return Response(RoundProbesSerializer(body).data)
