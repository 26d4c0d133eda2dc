"""The judges API (docs/benchmarking.md, "Judges"):

* ``GET /api/tasks/{slug}/judges/``: the judges page's figures (``presenting.judges_figures``); anyone,
  for an active red-teaming task (404 otherwise);
* ``POST /api/judges/{id}/run/``: queue the judge's run (``services.run_judge``); the task's owners
  (401 signed out, 403 for others who may see the judge, 404 for a judge of a task that is not active),
  202 with the judge's status, 409 when it is already running, switched off or its model is not ready.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.lookups import positive_int_or_404
from generative_bench.kinds import benchmarked
from models_registry.serializers import ModelErrorSerializer
from tasks.api import SLUG
from tasks.selectors import task_or_404
from tasks.serializers import AcrossPeopleSerializer

from ..models import Judge
from .presenting import judges_figures
from .services import JudgeError, run_judge

ERROR = ModelErrorSerializer
JUDGE_ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The judge's id.")


class AgreementSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="Outputs people settled with a readable verdict of the judge.")
    kappa = serializers.FloatField(
        allow_null=True,
        help_text="Cohen's kappa in [-1, 1]; null when undefined, kappa_undefined saying why.",
    )
    kappa_undefined = serializers.CharField(
        allow_null=True,
        help_text="Why kappa is null: 'no items' (n is 0) or 'one label on both sides' (the judge and "
        "people gave every item the same label: kappa is 0/0, and the judge is never trusted); null "
        "when kappa is a number.",
    )
    kappa_interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="95% bootstrap interval [low, high] over the resamples where kappa is defined; null "
        "when kappa is.",
    )
    raw = serializers.FloatField(allow_null=True, help_text="Share of outputs where both agree, in [0, 1].")
    raw_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    left_out = serializers.IntegerField(help_text="Unreadable or failed verdicts on outputs people settled.")


class RateSerializer(serializers.Serializer):
    judged = serializers.IntegerField()
    failed = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="failed / judged; null when none judged.")
    across_people = AcrossPeopleSerializer(
        allow_null=True, help_text="The rate's interval across people; null with nothing judged."
    )


class PeopleSerializer(serializers.Serializer):
    attempts = serializers.IntegerField(help_text="Conversations their authors judged.")
    verified = serializers.IntegerField(help_text="Failures validators confirmed.")
    attack_success_rate = serializers.FloatField(allow_null=True, help_text="verified / attempts.")
    across_people = AcrossPeopleSerializer(
        allow_null=True, help_text="The rate's interval across people; null with no attempt."
    )


class JudgeErrorsSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="Outputs people settled and the judge judged (readable).")
    sensitivity = serializers.FloatField(
        allow_null=True, help_text="Judged failed among those people settled as failed; null with none."
    )
    sensitivity_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    specificity = serializers.FloatField(
        allow_null=True, help_text="Judged not failed among those people settled as not failed."
    )
    specificity_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    failed_by_people = serializers.IntegerField()
    not_failed_by_people = serializers.IntegerField()


class CorrectedRateSerializer(serializers.Serializer):
    observed = serializers.FloatField(
        allow_null=True, help_text="The judge's failure rate on the outputs people never judged."
    )
    outputs = serializers.IntegerField(help_text="Those outputs.")
    corrected = serializers.FloatField(
        allow_null=True,
        help_text="Rogan-Gladen: (observed + Sp - 1) / (Se + Sp - 1), clipped to [0, 1]; null when refused.",
    )
    interval = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="95% bootstrap interval over both the validation items and the outputs.",
    )
    refused = serializers.CharField(allow_null=True, help_text="Why there is no correction; null with one.")
    undefined_share = serializers.FloatField(help_text="Share of resamples with Se + Sp <= 1 (left out).")
    errors = JudgeErrorsSerializer()


class KindSensitivitySerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="A kind of failure of the task (the author's tag).")
    caught = serializers.IntegerField(
        help_text="Conversations of that kind people settled as failed that the judge judged failed."
    )
    n = serializers.IntegerField(
        help_text="Conversations of that kind people settled as failed, with a readable verdict."
    )
    sensitivity = serializers.FloatField(allow_null=True, help_text="caught / n; null with none.")
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True, help_text="Wilson 95%.")


class JudgeRoundSerializer(serializers.Serializer):
    round = serializers.IntegerField(help_text="Round number.")
    agreement = AgreementSerializer()
    judge = RateSerializer(help_text="The judge's verdicts on the round's human-judged conversations.")
    people = PeopleSerializer()
    corrected = CorrectedRateSerializer(
        allow_null=True,
        help_text="The judge's rate on outputs people never judged, corrected for its errors.",
    )
    sensitivity_by_kind = KindSensitivitySerializer(
        many=True, help_text="The judge's sensitivity per kind of failure, in the task's order."
    )


class JudgeModelSerializer(RateSerializer):
    round = serializers.IntegerField()
    model = serializers.CharField(help_text="As the leaderboard names it (anonymous models numbered).")
    is_target = serializers.BooleanField(
        help_text="True: conversations people held with the round's target; false: replayed answers."
    )
    people = RateSerializer(
        allow_null=True,
        help_text="People's failure rate on the same outputs' model and round (settled ratings of replayed "
        "answers, or the target's attack success rate); null when people judged none.",
    )


class JudgeFiguresSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    model = serializers.CharField()
    agreement_floor = serializers.FloatField()
    trusted = serializers.BooleanField(
        help_text="Pooled kappa at or above the floor, over at least min_items outputs."
    )
    status = serializers.CharField(help_text="The last run's state: queued, running, done, failed or empty.")
    progress = serializers.CharField()
    agreement = AgreementSerializer(help_text="Over all rounds.")
    rounds = JudgeRoundSerializer(many=True)
    models = JudgeModelSerializer(many=True)


class TaskJudgesSerializer(serializers.Serializer):
    task = serializers.CharField()
    min_items = serializers.IntegerField(help_text="The fewest outputs compared for a judge to be trusted.")
    failures_only = serializers.BooleanField(
        help_text="True when the task validates only conversations their authors judged failed "
        "(validate_non_fooling off): of people's conversations the comparison holds only claimed "
        "failures, so kappa compares the judge with people on failures only (beside replayed answers "
        "people rated)."
    )
    judges = JudgeFiguresSerializer(many=True)


class JudgeRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    progress = serializers.CharField()


class TaskJudges(APIView):
    """``GET /api/tasks/{slug}/judges/``: the task's judges with their agreement and rates."""

    permission_classes = [AllowAny]

    @extend_schema(
        summary="Read a task's judges and their agreement with people",
        parameters=[SLUG],
        responses={200: TaskJudgesSerializer, 404: ERROR},
    )
    def get(self, request, slug: str):
        task = task_or_404(slug)
        if not benchmarked(task.cfg):
            raise exceptions.NotFound("This task has no judges: it is not a red-teaming task.")
        return Response(judges_figures(task, request.user))


class JudgeBusy(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "busy"


class JudgeRun(APIView):
    """``POST /api/judges/{id}/run/``: queue the judge's run (the task's owners)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="Run a judge (task owners)",
        parameters=[JUDGE_ID],
        request=None,
        responses={202: JudgeRunSerializer, 401: ERROR, 403: ERROR, 404: ERROR, 409: ERROR},
    )
    def post(self, request, pk: str):
        judge = (
            Judge.objects.select_related("task")
            .filter(pk=positive_int_or_404(pk, what="judge"), task__is_active=True)
            .first()
        )
        if judge is None:
            raise exceptions.NotFound("No such judge.")
        if not judge.task.is_owner(request.user):
            raise exceptions.PermissionDenied("Only the task's owners may run its judges.")
        try:
            judge = run_judge(judge=judge, user=request.user)
        except JudgeError as exc:
            raise JudgeBusy(str(exc), code=exc.code) from None
        judge.refresh_from_db(fields=["status", "progress"])
        return Response(
            {"id": judge.pk, "status": judge.status, "progress": judge.progress},
            status=status.HTTP_202_ACCEPTED,
        )
