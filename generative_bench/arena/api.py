"""The arena's API (docs/benchmarking.md, "Arena"): what the arena pages do, for tools.
Thin: the writes go through ``services``, as the pages' do.

* ``POST /api/tasks/{slug}/battles/``: a battle on ``{prompt}`` or on ``{example}`` (a settled
  conversation of the task), both answers, no model names;
* ``POST /api/battles/{id}/vote/``: ``{vote}`` on one of the caller's battles; the names come back;
* ``GET /api/tasks/{slug}/arena/ranking/``: the ranking, public as the leaderboard.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.red_team.ratings import model_ratings
from annotation.serializers import TextField
from core.api.bodies import RejectUnknownFieldsMixin, StrictIntegerField
from core.api.lookups import MAX_ID, positive_int_or_404
from core.api.permissions import IsContributor
from core.api.throttling import ExampleCreateThrottle
from generative_bench.kinds import benchmarked
from models_registry.models import RegisteredModel
from tasks import qualification
from tasks.api import SLUG, NotQualifiedError
from tasks.selectors import task_or_404

from ..models import Battle
from . import selectors, services

BATTLE_ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The battle's id.")
#: HTTP status of each refusal of the services (``ArenaError.code``).
STATUS_OF_CODE = {
    "not_found": 404,
    "not_red_team": 404,
    "invalid": 400,
    "too_long": 400,
    "blocked": 403,
    "not_enough_models": 409,
    "not_ready": 409,
}


class Refused(exceptions.APIException):
    """A refusal of the arena's services with the status of its code (``STATUS_OF_CODE``; 409 otherwise):
    the body is ``{"detail": message, "code": code}``."""

    def __init__(self, error: services.ArenaError):
        self.status_code = STATUS_OF_CODE.get(error.code, 409)
        super().__init__(detail=str(error), code=error.code)
        self.detail = {"detail": self.detail, "code": error.code}


def _run(call):
    """``call()``, its service refusals as API errors."""
    try:
        return call()
    except services.ArenaError as exc:
        raise Refused(exc) from None
    except qualification.NotQualified as exc:
        raise NotQualifiedError(exc.code, exc.message, exc.url) from None


class MessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "user", "assistant"])
    content = serializers.CharField()


class RevealedSerializer(serializers.Serializer):
    a = serializers.CharField(help_text="The model that gave answer A, as the caller is shown it.")
    b = serializers.CharField(help_text="The model that gave answer B.")


class BattleSerializer(serializers.ModelSerializer):
    """A battle as its voter sees it. ``models`` is null until the conversation's last vote is recorded
    (a vote without a ``follow_up``): before it, no field names a model (the answers' generation
    records, which do, are left out too)."""

    task = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    round = serializers.IntegerField(source="round.number", allow_null=True, read_only=True)
    example = serializers.IntegerField(source="source_example_id", allow_null=True, read_only=True)
    messages = MessageSerializer(many=True, read_only=True)
    models = serializers.SerializerMethodField()
    generation_a = serializers.SerializerMethodField()
    generation_b = serializers.SerializerMethodField()
    recorded = serializers.SerializerMethodField()
    anonymous = serializers.BooleanField(
        read_only=True,
        help_text="False when an answer named a model: the vote is taken but counted apart, not ranked.",
    )
    parent = serializers.IntegerField(
        source="parent_id", allow_null=True, read_only=True, help_text="The turn this one continues."
    )
    continuation = serializers.SerializerMethodField()
    identity_leak = serializers.SerializerMethodField()

    class Meta:
        model = Battle
        fields = [
            "id",
            "task",
            "round",
            "example",
            "messages",
            "status",
            "answer_a",
            "answer_b",
            "error",
            "vote",
            "anonymous",
            "identity_leak",
            "turn",
            "parent",
            "continuation",
            "models",
            "generation_a",
            "generation_b",
            "created_at",
            "voted_at",
            "recorded",
        ]
        read_only_fields = fields

    def _voted(self, battle: Battle) -> bool:
        """Whether the names may be shown: the conversation's last vote was cast (``Battle.revealed``)."""
        return battle.revealed

    @extend_schema_field(serializers.CharField())
    def get_identity_leak(self, battle: Battle) -> str:
        """Which answer named which model or vendor, once the names are revealed; before, only that an
        answer names one (the terms come from the models' names, which are hidden); empty when none."""
        if battle.anonymous:
            return ""
        return (
            battle.identity_leak
            if self._voted(battle)
            else "An answer names a model; the vote is counted apart."
        )

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_continuation(self, battle: Battle) -> int | None:
        """The next turn's battle, started by a vote with a ``follow_up``; null when none."""
        following = Battle.objects.filter(parent=battle).values_list("pk", flat=True).first()
        return following

    @extend_schema_field(RevealedSerializer(allow_null=True))
    def get_models(self, battle: Battle) -> dict | None:
        if not self._voted(battle):
            return None
        names = selectors.shown_names(
            self.context["request"].user, battle.task, [battle.model_a, battle.model_b]
        )
        return {"a": names[battle.model_a_id], "b": names[battle.model_b_id]}

    def _generation(self, battle: Battle, record: dict) -> dict | None:
        if not self._voted(battle) or not record:
            return None
        shown = dict(record)
        shown.pop("model", None)  # the runner's model name; ``models`` gives the name the caller may see
        return shown

    @extend_schema_field(serializers.JSONField(allow_null=True))
    def get_generation_a(self, battle: Battle) -> dict | None:
        """Answer A's record (tokens, times, cost, finish reason) once voted; null before."""
        return self._generation(battle, battle.generation_a)

    @extend_schema_field(serializers.BooleanField(allow_null=True))
    def get_recorded(self, battle: Battle) -> bool | None:
        """In a vote's answer: whether this request recorded the vote (false: the battle already had one,
        which is the vote shown); null elsewhere."""
        return getattr(battle, "recorded", None)

    @extend_schema_field(serializers.JSONField(allow_null=True))
    def get_generation_b(self, battle: Battle) -> dict | None:
        return self._generation(battle, battle.generation_b)


class BattleBodySerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    prompt = TextField(required=False, help_text="Your prompt; or give example instead.")
    example = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_ID,
        help_text="A settled conversation of the task (its id): its passage and first message are the prompt.",
    )
    client_token = serializers.UUIDField(
        required=False, allow_null=True, help_text="Resent with the same token, the stored battle comes back."
    )

    def validate(self, attrs):
        if ("prompt" in attrs) == ("example" in attrs):
            raise serializers.ValidationError("Give prompt or example, one of them.")
        return attrs


class VoteBodySerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    vote = serializers.ChoiceField(choices=Battle.Vote.choices)
    follow_up = TextField(
        required=False,
        help_text="Your next message: vote and continue (the preferred answer kept; names stay hidden). "
        "Left out: vote and finish (the names are shown).",
    )


class FragilitySerializer(serializers.Serializer):
    removals = serializers.IntegerField(
        allow_null=True,
        help_text="The fewest votes found whose removal changes the model's rank (a greedy search: an "
        "upper bound on the fewest); null when none was found within fragility_max_removals per rival.",
    )
    direction = serializers.CharField(
        allow_null=True, help_text='"down": a model below passes it; "up": it passes the model above.'
    )


class StyleRowSerializer(serializers.Serializer):
    score = serializers.FloatField(help_text="Bradley-Terry score controlled for answer length and markdown.")
    low = serializers.FloatField(allow_null=True, help_text="Its 95% bootstrap interval's low end.")
    high = serializers.FloatField(allow_null=True)


class StyleCoefficientSerializer(serializers.Serializer):
    feature = serializers.CharField(help_text="length (words), headers, lists or bold.")
    coefficient = serializers.FloatField(
        allow_null=True,
        help_text="Change of the log-odds of winning per standard deviation of the feature's normalised "
        "difference; > 0: voters preferred more of it. Null when it differed in fewer than 10 votes.",
    )
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    varied = serializers.IntegerField(help_text="Votes in which the feature differed between the answers.")


class RankingRowSerializer(serializers.Serializer):
    model_id = serializers.IntegerField()
    name = serializers.CharField()
    rank = serializers.IntegerField(allow_null=True, help_text="1 = best; null for a model without votes.")
    score = serializers.FloatField(help_text="Bradley-Terry strength on an Elo-like scale (mean 1000).")
    low = serializers.FloatField(allow_null=True, help_text="The 95% bootstrap interval's low end.")
    high = serializers.FloatField(allow_null=True)
    votes = serializers.IntegerField()
    fragility = FragilitySerializer(allow_null=True, help_text="Null without votes, or not searched.")
    style_controlled = StyleRowSerializer(allow_null=True, help_text="Null without votes.")
    share = serializers.FloatField(
        allow_null=True, help_text="Share of the counted votes with this model in them (shares sum to 2)."
    )
    target_share = serializers.FloatField(
        allow_null=True,
        help_text="The share of battles the pair rule now aims at for it (the probability the next battle "
        "involves it); null for a model no longer served.",
    )
    votes_since_change = serializers.IntegerField(
        help_text="Votes that count cast with it since its answers last changed (its weights, server or settings)."
    )
    provisional = serializers.BooleanField(help_text="Fewer votes since its last change than min_votes.")
    withdrawn = serializers.BooleanField(
        help_text="In battles once, no longer served (not ready, or not generative): listed, never hidden."
    )


class PairRowSerializer(serializers.Serializer):
    model_id = serializers.IntegerField()
    name = serializers.CharField()
    votes = serializers.ListField(
        child=serializers.IntegerField(allow_null=True),
        help_text="Votes against each row's model; null for itself.",
    )


class LeftOutSerializer(serializers.Serializer):
    held = serializers.IntegerField(help_text="Votes of people held for review on the task.")
    blocked = serializers.IntegerField(
        help_text="Votes of blocked accounts or people on the task's block list."
    )
    not_anonymous = serializers.IntegerField(
        help_text="Votes on battles where an answer named a model (counted apart, not ranked)."
    )


class FlaggedVoterSerializer(serializers.Serializer):
    user_id = serializers.IntegerField()
    username = serializers.CharField()
    reason = serializers.CharField()


class VoterGroupSerializer(serializers.Serializer):
    model_id = serializers.IntegerField()
    name = serializers.CharField()
    voters = serializers.IntegerField(help_text="Voters who chose the model far more often than predicted.")
    expected = serializers.FloatField(help_text="How many such voters an honest arena has, on average.")
    excess = serializers.FloatField()
    threshold = serializers.FloatField()
    flagged = serializers.BooleanField()


class VoterChecksSerializer(serializers.Serializer):
    voters = serializers.IntegerField(help_text="Voters whose votes count.")
    tested = serializers.IntegerField(help_text="Those with enough decisive votes for the per-voter test.")
    flagged = FlaggedVoterSerializer(many=True)
    groups = VoterGroupSerializer(many=True)
    held = serializers.IntegerField()


class TopWordsSerializer(serializers.Serializer):
    name = serializers.CharField()
    words = serializers.ListField(child=serializers.CharField())


class LeakRateSerializer(serializers.Serializer):
    accuracy = serializers.FloatField(
        allow_null=True, help_text="Share of held-out answers whose model was guessed."
    )
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    chance = serializers.FloatField(allow_null=True, help_text="Always guessing the most common model.")
    tested = serializers.IntegerField(help_text="Held-out answers classified.")
    models = serializers.IntegerField()
    train_battles = serializers.IntegerField()
    test_battles = serializers.IntegerField()
    leaks = serializers.BooleanField(help_text="The accuracy's 95% interval lies above chance.")
    reason = serializers.CharField(help_text="Why there is no figure; empty when there is one.")
    top_words = TopWordsSerializer(many=True, help_text="The words that most give each model away.")
    measured_at = serializers.DateTimeField()


class RankingSerializer(serializers.Serializer):
    rows = RankingRowSerializer(many=True)
    pairs = PairRowSerializer(many=True)
    n_votes = serializers.IntegerField(help_text="Votes counted: battles' votes and rated pairs.")
    rated_pairs = serializers.IntegerField(
        help_text="Of n_votes, the rated pairs of side-by-side conversations (each pair of answers to one "
        "first message a vote for the higher rated; equal ratings a tie)."
    )
    battle_votes = serializers.IntegerField(help_text="Of n_votes, the votes cast in battles.")
    samples = serializers.IntegerField()
    left_out = LeftOutSerializer()
    n_left_out = serializers.IntegerField()
    unlisted = serializers.IntegerField(help_text="Models in the arena the caller may not see (unpublished).")
    fragility_searched = serializers.BooleanField(
        help_text="False when the arena has too many votes for the fragility search (each row's is null)."
    )
    fragility_max_removals = serializers.IntegerField()
    style_coefficients = StyleCoefficientSerializer(many=True)
    min_votes = serializers.IntegerField(
        help_text="Votes a model needs since its last change before its rating is not provisional "
        "(the task's red_team.arena_min_votes, default 300)."
    )
    leak_rate = LeakRateSerializer(
        allow_null=True, help_text="The latest leak-rate measurement; null if none."
    )
    voter_checks = VoterChecksSerializer(
        allow_null=True,
        help_text="The voter-integrity tests, for the task's owners only (null for anyone else).",
    )


def _arena_task(slug: str):
    task = task_or_404(slug)
    if not benchmarked(task.cfg):
        raise exceptions.NotFound("Not a red-teaming task.")
    return task


@extend_schema(parameters=[SLUG])
class BattleCreate(APIView):
    """Start a battle: two of the task's ready generative models, picked to narrow the ranking's widest
    interval and not named, answer ``prompt`` (or the first message of the settled conversation
    ``example``, with its passage). 201 with both answers, or with ``status`` ``failed`` and ``error``
    when a model failed (no vote is taken on it); 200 for a ``client_token`` already used, with the
    stored battle. 404 for a task that is not a red-teaming task; 409 ``not_enough_models`` with fewer
    than two ready generative models; 400 for a refused prompt."""

    permission_classes = [IsContributor]

    def get_throttles(self):
        return [ExampleCreateThrottle()]

    @extend_schema(request=BattleBodySerializer, responses={201: BattleSerializer, 200: BattleSerializer})
    def post(self, request, slug):
        task = _arena_task(slug)
        body = BattleBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        token = data.get("client_token")
        resent = token is not None and Battle.objects.filter(voter=request.user, client_token=token).exists()
        kwargs = {"task": task, "voter": request.user, "client_token": token}
        if "example" in data:
            example = selectors.prompt_example(task, data["example"])
            if example is None and not resent:
                raise Refused(
                    services.ArenaError("No settled conversation of this task has that id.", "invalid")
                )
            kwargs["source_example"] = example
        else:
            kwargs["prompt"] = data["prompt"]
        battle = _run(lambda: services.start_battle(**kwargs))
        code = status.HTTP_200_OK if resent else status.HTTP_201_CREATED
        return Response(BattleSerializer(battle, context={"request": request}).data, status=code)


class BattleDetail(APIView):
    """One of the caller's battles as it is now (answers, status, vote, ``turn``, ``continuation``; names
    only once revealed): for a client that lost the answer to its POST. Another user's battle is a 404,
    as a missing one."""

    permission_classes = [IsContributor]

    @extend_schema(parameters=[BATTLE_ID], responses={200: BattleSerializer})
    def get(self, request, pk):
        battle = selectors.own_battle(request.user, positive_int_or_404(pk, what="battle"))
        if battle is None:
            raise exceptions.NotFound("No such battle.")
        return Response(BattleSerializer(battle, context={"request": request}).data)


class BattleVote(APIView):
    """Vote on one of the caller's battles: ``a`` (A is better), ``b``, ``tie`` or ``both_bad``. 200 with
    the battle and the two models' names; ``recorded`` false when it already had its vote (a double
    click, another tab: the vote recorded first stands). Another user's battle is a 404, as a missing
    one; 409 for a battle still answering or failed."""

    permission_classes = [IsContributor]

    @extend_schema(parameters=[BATTLE_ID], request=VoteBodySerializer, responses={200: BattleSerializer})
    def post(self, request, pk):
        battle = selectors.own_battle(request.user, positive_int_or_404(pk, what="battle"))
        if battle is None:
            raise exceptions.NotFound("No such battle.")
        body = VoteBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        battle, recorded = _run(
            lambda: services.vote(
                battle=battle, voter=request.user, vote=data["vote"], follow_up=data.get("follow_up")
            )
        )
        battle.recorded = recorded
        return Response(BattleSerializer(battle, context={"request": request}).data)


@extend_schema(parameters=[SLUG])
class ArenaRanking(APIView):
    """The arena's Bradley-Terry ranking, public as the leaderboard is: per model the score (Elo-like,
    mean 1000), its 95% bootstrap interval, rank and votes; the votes per pair; the votes left out (held
    for review, blocked: counts only). Models the caller may not see are not listed. 404 for a task that
    is not a red-teaming task."""

    permission_classes: list = []

    @extend_schema(responses={200: RankingSerializer})
    def get(self, request, slug):
        task = _arena_task(slug)
        table = selectors.ranking_table(task, request.user, selectors.arena_summary(task))
        table["voter_checks"] = selectors.voter_check_table(task, request.user)
        table["leak_rate"] = selectors.latest_leak(task, request.user)
        return Response(RankingSerializer(table).data)


class ClusteredRateSerializer(serializers.Serializer):
    rate = serializers.FloatField(allow_null=True)
    n = serializers.FloatField()
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    people = serializers.IntegerField()
    effective_sample_size = serializers.FloatField(allow_null=True)
    interval_method = serializers.CharField(allow_null=True)
    independent_interval = serializers.ListField(child=serializers.FloatField(), allow_null=True)


class ModelRatingsSerializer(serializers.Serializer):
    model = serializers.CharField(help_text="As the arena's ranking names it (an unpublished model unnamed).")
    shown = serializers.IntegerField(help_text="Its rated answers to first messages.")
    people = serializers.IntegerField(help_text="Writers who rated one.")
    mean_score = serializers.FloatField(help_text="Mean rating, 1 (worst) to 100 (best).")
    score_interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="95%, clustered by writer; null under 5."
    )
    failure_rate = ClusteredRateSerializer(help_text="Answers whose rubric answers judge a failure.")
    chosen_rate = ClusteredRateSerializer(help_text="Answers the writer went on with.")


@extend_schema(parameters=[SLUG, OpenApiParameter("number", OpenApiTypes.INT, OpenApiParameter.PATH)])
class SideBySideRatings(APIView):
    """Round ``number``'s side-by-side ratings per model (docs/generative.md, "Several models in one
    conversation"): rated answers, writers, the mean 1-100 rating, the share judged a failure and the share
    chosen, each with its 95% interval clustered by writer; by mean rating. Public as the arena's
    ranking, with its names. 404 for a task that is not a red-teaming task or a round it does not have."""

    permission_classes: list = []

    @extend_schema(responses={200: ModelRatingsSerializer(many=True)})
    def get(self, request, slug, number):
        task = _arena_task(slug)
        number = positive_int_or_404(number, what="round")
        if not task.rounds.filter(number=number).exists():
            raise exceptions.NotFound("No such round.")
        rows = model_ratings(task, number)
        names = selectors.shown_names(
            request.user, task, RegisteredModel.objects.filter(pk__in=[r.model_id for r in rows])
        )
        data = [{**r.as_dict(), "model": names[r.model_id]} for r in rows]
        return Response(ModelRatingsSerializer(data, many=True).data)
