"""``GET /api/tasks/{slug}/rounds/{n}/agreement/``: a round's agreement per validator and per annotator
(``validation.agreement``), people as their export pseudonyms; task owners only (401 signed out, 403
for anyone else), since the figures are per person."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.lookups import positive_int_or_404
from tasks.api import NUMBER, SLUG
from tasks.models import Round

from ..agreement import round_quality
from ..gold.api import owned_task_or_403


class AgreementValidatorSerializer(serializers.Serializer):
    """One validator in the round (definitions: ``validation.agreement``)."""

    validator = serializers.CharField(help_text="Export pseudonym in this round.")
    votes = serializers.IntegerField(help_text="Ordinary verdicts on the round's collected examples.")
    coded_units = serializers.IntegerField(help_text="Of those examples, the ones with two or more verdicts.")
    alpha = serializers.FloatField(
        allow_null=True,
        help_text="Krippendorff's alpha (nominal) over the examples they voted on, everyone's verdicts; "
        "null when not computable.",
    )
    judged_settled = serializers.IntegerField()
    agreeing = serializers.IntegerField()
    agreement = serializers.FloatField(
        allow_null=True, help_text="agreeing / judged_settled: share of their verdicts matching the outcome."
    )
    gold_answered = serializers.IntegerField(help_text="Gold answers on the task (every round).")
    gold_correct = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True, help_text="gold_correct / gold_answered.")


class AgreementAnnotatorSerializer(serializers.Serializer):
    """One annotator in the round (definitions: ``validation.agreement``)."""

    annotator = serializers.CharField(help_text="Export pseudonym in this round.")
    examples = serializers.IntegerField()
    settled = serializers.IntegerField()
    validated_correct = serializers.IntegerField()
    correct_share = serializers.FloatField(allow_null=True, help_text="validated_correct / settled.")
    coded_units = serializers.IntegerField()
    alpha = serializers.FloatField(allow_null=True)


class RoundAgreementSerializer(serializers.Serializer):
    round = serializers.IntegerField()
    alpha = serializers.FloatField(allow_null=True, help_text="The round's alpha, as in its statistics.")
    validators = AgreementValidatorSerializer(many=True)
    annotators = AgreementAnnotatorSerializer(many=True)


class RoundAgreement(APIView):
    """A round's agreement: overall alpha, per validator (alpha, agreement with the outcome, gold
    accuracy) and per annotator (alpha, share validated correct). Task owners only."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[SLUG, NUMBER], responses={200: RoundAgreementSerializer})
    def get(self, request, slug: str, number):
        task = owned_task_or_403(request, slug, what="its rounds' agreement per person")
        number = positive_int_or_404(number, what="round")
        round_ = Round.objects.select_related("task").filter(task=task, number=number).first()
        if round_ is None:
            raise exceptions.NotFound("No such round.")
        return Response(RoundAgreementSerializer(round_quality(round_)).data)
