"""Replays, judges and arena battles: the tables of generative benchmarking (docs/benchmarking.md)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from tasks.json import UnicodeJSONEncoder


class Replay(models.Model):
    """One round's settled prompts sent to one registered generative model (docs/benchmarking.md,
    "Replay").

    ``target_turns``: for a conversation of several turns, ``keep`` sends the human turns with the round
    target's answers as they were, and asks ``model`` only for the last answer; ``regenerate`` asks
    ``model`` for every answer in turn, each on its own earlier answers. A multiple-choice item is scored
    (``model`` picks an option) either way.

    The job (``jobs.run_replay_job``) is resumable: it skips the items that already have a
    ``ReplayAnswer`` with status ``ok``, so a replay run again after a crash or a cancel does only what
    is left. ``total`` is the number of items when the job started; ``done`` and ``failed`` count the
    answers stored.
    """

    class TargetTurns(models.TextChoices):
        KEEP = "keep", "Keep the target's earlier answers"
        REGENERATE = "regenerate", "Regenerate every answer"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="replays")
    model = models.ForeignKey(
        "models_registry.RegisteredModel", on_delete=models.PROTECT, related_name="replays"
    )
    target_turns = models.CharField(max_length=12, choices=TargetTurns.choices, default=TargetTurns.KEEP)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    progress = models.CharField(max_length=200, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["round", "model", "target_turns"], name="replay_one_per_round_model_and_turns"
            ),
        ]

    def __str__(self) -> str:
        return f"replay of {self.round} on {self.model}"


class ReplayAnswer(models.Model):
    """``replay.model``'s answer to one settled example of the replayed round.

    For a conversation: ``messages`` is what the model was sent for its last answer (the passage as the
    system message, the human turns and the earlier answers, kept or regenerated) and ``answer`` its last
    answer; ``answers`` holds every answer it gave (one per user turn when regenerated, else one);
    ``generation`` the last answer's record (``runtime.generative.Generation.as_dict()``: tokens, seconds,
    time to first token, cost) and ``tokens``/``cost``/``seconds``/``first_token_seconds`` the sums over
    its answers (cost None when unknown). For a multiple-choice item: ``picked`` (the option's index in
    the order shown) and ``correct``.

    ``rating_example``: the example the validate page serves for people to judge this answer by the rubric
    (``replay.services.open_rating``), None until rating is opened.
    """

    class Status(models.TextChoices):
        OK = "ok", "Answered"
        FAILED = "failed", "Failed"

    replay = models.ForeignKey(Replay, on_delete=models.CASCADE, related_name="answers")
    example = models.ForeignKey("annotation.Example", on_delete=models.PROTECT, related_name="replay_answers")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    messages = models.JSONField(encoder=UnicodeJSONEncoder, default=list, blank=True)
    answer = models.TextField(blank=True)
    answers = models.JSONField(encoder=UnicodeJSONEncoder, default=list, blank=True)
    generation = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    tokens = models.PositiveIntegerField(null=True, blank=True, help_text="Output tokens of all its answers.")
    cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="Wall-clock seconds of all its answers.")
    first_token_seconds = models.FloatField(
        null=True, blank=True, help_text="Seconds to the first token of its last answer."
    )
    picked = models.SmallIntegerField(null=True, blank=True)
    correct = models.BooleanField(null=True, blank=True)
    error = models.TextField(blank=True)
    rating_example = models.OneToOneField(
        "annotation.Example", null=True, blank=True, on_delete=models.SET_NULL, related_name="rated_answer"
    )
    attempts = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["replay", "example_id"]
        constraints = [
            models.UniqueConstraint(fields=["replay", "example"], name="replay_answer_one_per_example"),
        ]

    def __str__(self) -> str:
        return f"{self.replay.model} on example {self.example_id}"


class Judge(models.Model):
    """A registered generative model made a task's judge: it answers the task's rubric for model outputs
    (docs/benchmarking.md, "Judges"). Its verdicts sit beside people's and never settle an example.

    ``prompt_template``: the prompt sent to the judge, with ``{context}``, ``{conversation}``,
    ``{output}`` and ``{rubric}`` filled in (``judges.prompts``). ``agreement_floor``: the Cohen's kappa
    against settled human verdicts below which the judge is shown as not trusted.
    """

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="judges")
    model = models.ForeignKey("models_registry.RegisteredModel", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=200)
    prompt_template = models.TextField()
    agreement_floor = models.FloatField(
        default=0.4, help_text="Cohen's kappa below which this judge is shown as not trusted."
    )
    is_active = models.BooleanField(default=True)
    status = models.CharField(max_length=10, blank=True, help_text="The last run's state.")
    progress = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task", "name"]
        constraints = [
            models.UniqueConstraint(fields=["task", "name"], name="judge_name_unique_per_task"),
            models.CheckConstraint(
                condition=Q(agreement_floor__gte=-1) & Q(agreement_floor__lte=1),
                name="judge_agreement_floor_in_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class JudgeVerdict(models.Model):
    """A judge's rubric answers on one model output: a human-judged conversation (``example``) or a
    replayed answer (``replay_answer``), exactly one of them.

    ``failed``: the rubric's verdict on the judge's answers (``tasks.rubric.Rubric.failed``); None when
    the judge's output could not be read as answers (``status`` ``unreadable``, its text in ``raw``) or
    the judge failed (``failed``, ``error`` says why).
    """

    class Status(models.TextChoices):
        OK = "ok", "Answered"
        UNREADABLE = "unreadable", "Answer not readable"
        FAILED = "failed", "Failed"

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="verdicts")
    example = models.ForeignKey(
        "annotation.Example", null=True, blank=True, on_delete=models.PROTECT, related_name="judge_verdicts"
    )
    replay_answer = models.ForeignKey(
        ReplayAnswer, null=True, blank=True, on_delete=models.CASCADE, related_name="judge_verdicts"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OK)
    rubric_answers = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    failed = models.BooleanField(null=True, blank=True)
    raw = models.TextField(blank=True)
    error = models.TextField(blank=True)
    generation = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["judge", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(example__isnull=False) & Q(replay_answer__isnull=True))
                | (Q(example__isnull=True) & Q(replay_answer__isnull=False)),
                name="judge_verdict_on_one_output",
            ),
            models.UniqueConstraint(
                fields=["judge", "example"],
                condition=Q(example__isnull=False),
                name="judge_verdict_one_per_example",
            ),
            models.UniqueConstraint(
                fields=["judge", "replay_answer"],
                condition=Q(replay_answer__isnull=False),
                name="judge_verdict_one_per_replay_answer",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge}: {self.status}"


class PairwiseJudge(models.Model):
    """A registered generative model that votes arena battles, each in both orders, to measure its
    position bias and its agreement with people's votes (docs/benchmarking.md, "Pairwise judges").

    It is asked, for one battle's prompt and its two answers, which answer is better: "1", "2" or "tie"
    (``pairwise.services.PROMPT``), read as the option with the highest log-likelihood
    (``models_registry.generative.choose``), once with model a's answer first and once with b's.
    """

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="pairwise_judges")
    model = models.ForeignKey("models_registry.RegisteredModel", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=200)
    is_active = models.BooleanField(default=True)
    status = models.CharField(max_length=10, blank=True, help_text="The last run's state.")
    progress = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["task", "name"]
        constraints = [
            models.UniqueConstraint(fields=["task", "name"], name="pairwise_judge_name_unique_per_task")
        ]

    def __str__(self) -> str:
        return self.name


class PairwiseVerdict(models.Model):
    """A pairwise judge's preference on one pair shown in one order: an arena ``battle``, or a **replay
    pair** (``answer_a`` and ``answer_b``: two models' replayed answers to one conversation, the lower
    model id as a). ``order`` ``ab`` (a's answer first) or ``ba``; ``preferred`` in terms of the pair's
    models (``a``, ``b`` or ``tie``, already mapped back for ``ba``), empty when the judge could not
    answer (``error`` says why)."""

    class Order(models.TextChoices):
        AB = "ab", "A's answer first"
        BA = "ba", "B's answer first"

    judge = models.ForeignKey(PairwiseJudge, on_delete=models.CASCADE, related_name="verdicts")
    battle = models.ForeignKey(
        "Battle", null=True, blank=True, on_delete=models.CASCADE, related_name="pairwise_verdicts"
    )
    answer_a = models.ForeignKey(
        ReplayAnswer, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    answer_b = models.ForeignKey(
        ReplayAnswer, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    order = models.CharField(max_length=2, choices=Order.choices)
    preferred = models.CharField(max_length=4, blank=True)
    scores = models.JSONField(default=list, blank=True, help_text="The options' log-likelihood scores.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["judge", "battle", "answer_a", "answer_b", "order"]
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "battle", "order"], name="pairwise_verdict_one_per_order"
            ),
            models.UniqueConstraint(
                fields=["judge", "answer_a", "answer_b", "order"],
                condition=Q(battle__isnull=True),
                name="pairwise_verdict_one_per_replay_pair_order",
            ),
            models.CheckConstraint(
                condition=(
                    Q(battle__isnull=False, answer_a__isnull=True, answer_b__isnull=True)
                    | Q(battle__isnull=True, answer_a__isnull=False, answer_b__isnull=False)
                ),
                name="pairwise_verdict_battle_or_replay_pair",
            ),
            models.CheckConstraint(
                condition=Q(preferred__in=["", "a", "b", "tie"]), name="pairwise_verdict_preferred_known"
            ),
        ]

    def __str__(self) -> str:
        pair = (
            f"battle {self.battle_id}"
            if self.battle_id
            else f"replay pair {self.answer_a_id}/{self.answer_b_id}"
        )
        return f"{self.judge} on {pair} ({self.order}): {self.preferred or 'no answer'}"


class Battle(models.Model):
    """One arena comparison (docs/benchmarking.md, "Arena"): two anonymous generative models of a task
    answer the same prompt, and one person votes A, B, tie or both bad.

    ``messages``: the prompt as sent to both (the passage as the system message when from a round);
    ``source_example``: the round example the prompt came from, None when the voter wrote it. Model names
    are shown only once ``vote`` is set. ``status``: ``answering`` while the answers are generated,
    ``ready`` to vote, ``voted``, or ``failed`` (a model failed; no vote is taken).

    ``anonymous``: False when an answer named a model (``core.self_identification``) and the task's rule
    kept the battle (``identity_leak`` says which answer named what): its vote is taken but counted apart,
    out of the ranking. ``regenerated``: answers asked again because they named a model.

    **A vote per turn.** A voter may vote and continue (``arena.services.vote(..., follow_up=...)``): the
    next turn is another battle, ``parent`` this one and ``turn`` one more, between the same two models on
    the same sides, whose ``messages`` are this one's, the answer the voter preferred (A's on a tie) and
    the new message. ``revealed`` turns True for every battle of the conversation when its last vote is
    cast without continuing (or the next turn fails): model names are shown only then, so each turn's
    vote is as blind as the first.
    """

    class Status(models.TextChoices):
        ANSWERING = "answering", "Answering"
        READY = "ready", "Ready to vote"
        VOTED = "voted", "Voted"
        FAILED = "failed", "Failed"

    class Vote(models.TextChoices):
        A = "a", "A is better"
        B = "b", "B is better"
        TIE = "tie", "Tie"
        BOTH_BAD = "both_bad", "Both are bad"

    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="battles")
    round = models.ForeignKey(
        "tasks.Round", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    source_example = models.ForeignKey(
        "annotation.Example", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    voter = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="battles")
    messages = models.JSONField(encoder=UnicodeJSONEncoder, default=list)
    model_a = models.ForeignKey("models_registry.RegisteredModel", on_delete=models.PROTECT, related_name="+")
    model_b = models.ForeignKey("models_registry.RegisteredModel", on_delete=models.PROTECT, related_name="+")
    answer_a = models.TextField(blank=True)
    answer_b = models.TextField(blank=True)
    generation_a = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    generation_b = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ANSWERING, db_index=True)
    vote = models.CharField(max_length=10, choices=Vote.choices, blank=True)
    error = models.TextField(blank=True)
    client_token = models.UUIDField(null=True, blank=True, help_text="A resent prompt is one battle.")
    anonymous = models.BooleanField(
        default=True, help_text="False when an answer named a model: the vote is counted apart."
    )
    identity_leak = models.TextField(blank=True, help_text="Which answer named which model or vendor.")
    regenerated = models.PositiveSmallIntegerField(
        default=0, help_text="Answers asked again because they named a model."
    )
    parent = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="continuation",
        help_text="The turn this one continues (the voter's preferred answer kept).",
    )
    turn = models.PositiveSmallIntegerField(default=1)
    revealed = models.BooleanField(default=False, help_text="The model names may be shown.")
    created_at = models.DateTimeField(auto_now_add=True)
    voted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(model_a=F("model_b")), name="battle_two_different_models"),
            models.CheckConstraint(
                condition=Q(vote="") | Q(status="voted"), name="battle_vote_only_when_voted"
            ),
            models.UniqueConstraint(
                fields=["voter", "client_token"],
                condition=Q(client_token__isnull=False),
                name="battle_one_per_voter_and_client_token",
            ),
        ]
        indexes = [models.Index(fields=["task", "status"])]

    def __str__(self) -> str:
        return f"battle {self.pk} ({self.task_id})"


class LeakMeasurement(models.Model):
    """One measurement of a task's arena leak rate (docs/benchmarking.md, "Leak rate"; ``core.leak_rate``):
    how often a bag-of-words classifier trained on revealed battles tells which model wrote a held-out
    answer (``accuracy`` with its Wilson 95% interval ``low``-``high``), against ``chance`` (the most
    common model's share); ``top_words`` the words that most give each model away (by model id). The
    figures are None, and ``reason`` says why, when too few battles were voted."""

    task = models.ForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="leak_measurements")
    accuracy = models.FloatField(null=True, blank=True)
    low = models.FloatField(null=True, blank=True)
    high = models.FloatField(null=True, blank=True)
    chance = models.FloatField(null=True, blank=True)
    tested = models.PositiveIntegerField(default=0, help_text="Held-out answers classified.")
    n_models = models.PositiveIntegerField(default=0, help_text="Models told apart.")
    train_battles = models.PositiveIntegerField(default=0)
    test_battles = models.PositiveIntegerField(default=0)
    top_words = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    reason = models.TextField(blank=True, help_text="Why there is no figure.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"leak rate of {self.task_id} at {self.created_at:%Y-%m-%d %H:%M}"
