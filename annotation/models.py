"""Examples written by annotators (or imported) and each target model's prediction on them."""

from __future__ import annotations

import random

from django.conf import settings
from django.db import models
from django.db.models import Q

from tasks.json import UnicodeJSONEncoder


def queue_key() -> float:
    """A uniform random number in [0, 1): an example's place in the validation queue among those with as
    many validations (``Example.queue_key``)."""
    return random.random()


class Example(models.Model):
    """What an annotator wrote in a round against a context (docs/domain.md, "Example").

    ``inputs`` maps the task's input field names to text; ``target`` holds the target field's value
    (a label string, or ``{"answer": str, "answer_start": int}`` for spans). ``model_wrong`` is
    decided on the server from the predictions; it is ``None`` while no prediction succeeded.

    Each state change happens at most once and keeps its time (docs/domain.md, "Example history"):
    ``settled_at`` (pending → a settled status, by ``services.settle_example``), ``retracted_at`` and
    ``flagged_at`` (the author's retraction and flag). They are null until the change happens, and for
    changes made before these fields existed; imported examples arrive settled, with no ``settled_at``.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        VALIDATED_CORRECT = "validated_correct", "Validated correct"
        VALIDATED_INCORRECT = "validated_incorrect", "Validated incorrect"
        FLAGGED = "flagged", "Flagged"

    class Source(models.TextChoices):
        CREATED = "created", "Written on the platform"
        IMPORTED = "imported", "Imported from a dataset"
        REPLAY = "replay", "Replayed from a dataset"
        # A generative model's replayed answer served to validators for rubric judgement
        # (generative_bench.replay): no author, no model verdict (``model_wrong`` None); settled
        # "incorrect" when people judge that the output failed.
        RATING = "rating", "Replayed answer for people to rate"

    class PredictionStatus(models.TextChoices):
        OK = "ok", "Model answered"
        FAILED = "failed", "Model failed"
        NONE = "none", "No target model"

    class Split(models.TextChoices):
        NONE = "", "None"
        TRAIN = "train", "Train"
        DEV = "dev", "Dev"
        TEST = "test", "Test"

    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="examples")
    context = models.ForeignKey(
        "tasks.Context", null=True, blank=True, on_delete=models.PROTECT, related_name="examples"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="examples"
    )
    inputs = models.JSONField(encoder=UnicodeJSONEncoder)
    target = models.JSONField(encoder=UnicodeJSONEncoder)
    explanation = models.TextField(blank=True)
    model_wrong = models.BooleanField(null=True, blank=True)
    # Uncertainty mode (tasks/uncertainty.py): whether the target was unsure of it, decided by the server
    # when it was stored; None outside that mode or while a model's answer is missing.
    model_unsure = models.BooleanField(null=True, blank=True)
    prediction_status = models.CharField(
        max_length=10, choices=PredictionStatus.choices, default=PredictionStatus.OK
    )
    status = models.CharField(max_length=30, choices=Status.choices, default=Status.PENDING, db_index=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.CREATED)
    split = models.CharField(max_length=5, choices=Split.choices, blank=True, default="")
    external_id = models.CharField(max_length=200, blank=True, help_text="Id in the source dataset.")
    tags = models.JSONField(encoder=UnicodeJSONEncoder, default=list, blank=True)
    metadata = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    client_token = models.UUIDField(
        null=True,
        blank=True,
        help_text="Sent with the form; a resubmission with the same token is one example.",
    )
    time_taken_ms = models.PositiveIntegerField(null=True, blank=True)
    is_retracted = models.BooleanField(default=False)
    is_flagged_by_annotator = models.BooleanField(default=False)
    flag_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    settled_at = models.DateTimeField(null=True, blank=True, help_text="When a verdict settled it.")
    retracted_at = models.DateTimeField(null=True, blank=True, help_text="When its author retracted it.")
    flagged_at = models.DateTimeField(null=True, blank=True, help_text="When its author flagged it.")
    updated_at = models.DateTimeField(auto_now=True)
    # Drawn once when the example is made. A validator's next example is one of the first fresh ones at
    # or after a random key (validation.services._first_of_queue): an index walk, and random among equals
    # whatever order the examples were written and validated in, which ids are not.
    queue_key = models.FloatField(default=queue_key, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "client_token"],
                condition=Q(client_token__isnull=False),
                name="example_one_per_annotator_and_client_token",
            ),
            models.UniqueConstraint(
                fields=["round", "external_id"],
                condition=~Q(external_id=""),
                name="example_external_id_unique_per_round",
            ),
        ]
        indexes = [
            # A validator's next example is found walking a round's pending examples in the order of their
            # queue keys from a random one (validation.selectors.fresh_queue_for), not by reading them all.
            models.Index(fields=["round", "status", "queue_key"], name="example_round_status_key"),
            models.Index(fields=["round", "model_wrong"]),
        ]

    def __str__(self) -> str:
        return f"example {self.pk} ({self.round})"

    @staticmethod
    def model_input_from(inputs: dict, context_data: dict | None) -> dict:
        """What the target models read of an example: its context's fields (a premise, a passage), then
        its input fields, by name (an input wins a name clash). The one definition of the model input,
        for live scoring, round datasets and training alike."""
        return {**(context_data or {}), **inputs}

    @property
    def model_input(self) -> dict:
        """``model_input_from(self.inputs, the context's data)`` (reads ``self.context`` when set)."""
        return self.model_input_from(self.inputs, self.context.data if self.context_id else None)


class Prediction(models.Model):
    """One target model's output on one example: label and probabilities, or answer and score."""

    class Status(models.TextChoices):
        OK = "ok", "OK"
        FAILED = "failed", "Failed"

    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="predictions")
    model = models.ForeignKey("models_registry.RegisteredModel", on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    label = models.CharField(max_length=100, blank=True)
    output = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    model_wrong = models.BooleanField(null=True, blank=True)
    error = models.TextField(blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    runtime = models.CharField(
        max_length=20,
        blank=True,
        default="",
        help_text="The runtime the model answered on (torch, onnx-fp32, onnx-int8); blank for a remote "
        "endpoint and for predictions stored before runtimes were recorded.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["example", "id"]
        constraints = [models.UniqueConstraint(fields=["example", "model"], name="prediction_one_per_model")]

    def __str__(self) -> str:
        return f"{self.model} on example {self.example_id}: {self.label or self.status}"


class Conversation(models.Model):
    """A red-teaming conversation: an annotator's turns with a round's generative target, before it
    becomes an example (docs/generative.md, "Conversations").

    Open while the annotator writes (up to the task's ``max_turns`` user turns); ``submitted`` once
    they answered the rubric (``example`` is then set); ``abandoned`` when they started another.
    """

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        SUBMITTED = "submitted", "Submitted"
        ABANDONED = "abandoned", "Abandoned"

    round = models.ForeignKey("tasks.Round", on_delete=models.PROTECT, related_name="conversations")
    context = models.ForeignKey(
        "tasks.Context", null=True, blank=True, on_delete=models.PROTECT, related_name="conversations"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="conversations"
    )
    model = models.ForeignKey(
        "models_registry.RegisteredModel", on_delete=models.PROTECT, related_name="conversations"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    example = models.OneToOneField(
        Example, null=True, blank=True, on_delete=models.SET_NULL, related_name="conversation"
    )
    side_by_side = models.PositiveSmallIntegerField(
        default=0,
        help_text="How many models answer the first message side by side (the task's config when the "
        "conversation began); 0: the round's target alone.",
    )
    chosen_turn = models.ForeignKey(
        "Turn",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Side by side: the first answer the writer chose to go on with (its model is ``model``).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"conversation {self.pk} ({self.round})"


class Turn(models.Model):
    """One user message of a conversation and the target's answer to it, with what produced the answer
    (``generation``: ``runtime.generative.Generation.as_dict()``: tokens, times, cost, finish reason).

    ``answering`` while the target streams (``answer`` then holds the text so far, written every few
    seconds); ``answered`` with the whole answer; ``failed`` when the target failed before any text
    (``error`` says why). A partial answer (cut off, timed out, its process gone) is ``answered`` with its
    finish reason in ``generation``.
    """

    class Status(models.TextChoices):
        ANSWERING = "answering", "Answering"
        ANSWERED = "answered", "Answered"
        FAILED = "failed", "Failed"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveSmallIntegerField(help_text="0 for the first user message.")
    slot = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Side by side: which of the first message's answers this is (0 is shown as A); blank "
        "for a turn of the conversation's one thread.",
    )
    model = models.ForeignKey(
        "models_registry.RegisteredModel",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The model answering a side-by-side answer; blank: the conversation's model.",
    )
    prompt = models.TextField()
    answer = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ANSWERING)
    generation = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, blank=True)
    error = models.TextField(blank=True)
    client_token = models.UUIDField(
        null=True, blank=True, help_text="The form's token: a resent turn is stored once."
    )
    answered_by = models.CharField(
        max_length=200,
        blank=True,
        help_text="The process streaming the answer (core.processes.this_process): one that died is "
        "known at once.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # A side-by-side first message's answers share index 0: their slots order them (A, B, ...).
        ordering = ["conversation", "index", "slot"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "index"], condition=Q(slot__isnull=True), name="turn_index_unique"
            ),
            models.UniqueConstraint(
                fields=["conversation", "index", "slot"],
                condition=Q(slot__isnull=False),
                name="turn_slot_unique",
            ),
            models.UniqueConstraint(
                fields=["conversation", "client_token"],
                condition=Q(client_token__isnull=False),
                name="turn_one_per_client_token",
            ),
        ]

    def __str__(self) -> str:
        return f"turn {self.index} of {self.conversation}"

    @property
    def slot_letter(self) -> str:
        """A side-by-side answer's name on the page ("A" for slot 0); "" for a turn of the thread."""
        return "" if self.slot is None else chr(ord("A") + self.slot)


class CandidateRating(models.Model):
    """The writer's rating of one side-by-side answer to a conversation's first message
    (docs/generative.md, "Several models in one conversation"): ``score`` on a 1-100 slider (PRISM's
    scale), the task's rubric answered (``answers``; ``failed`` as ``Rubric.failed`` decides), the failure
    categories (``tags``), and whether the writer ``chosen`` this answer to go on with."""

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="rating")
    score = models.PositiveSmallIntegerField(help_text="1 (worst) to 100 (best).")
    answers = models.JSONField(encoder=UnicodeJSONEncoder, default=dict, help_text="{question: answer}")
    failed = models.BooleanField(help_text="The rubric answers judge a failure of the model.")
    tags = models.JSONField(encoder=UnicodeJSONEncoder, default=list, blank=True)
    chosen = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["turn__conversation", "turn__slot"]
        constraints = [
            models.CheckConstraint(
                condition=Q(score__gte=1) & Q(score__lte=100), name="candidate_rating_score_1_to_100"
            )
        ]

    def __str__(self) -> str:
        return f"rating {self.score} of {self.turn}"


class RoundBudget(models.Model):
    """A red-teaming round's spending cap on its target, in the currency of the target's prices (its
    generation settings' ``price_input_per_million`` / ``price_output_per_million``), set by the owner.

    ``cap`` bounds every turn's charge together; ``per_person`` one writer's; ``per_day`` the round's in one
    UTC day. A turn is refused before the model is called when its worst case (``BudgetCharge.reserved``)
    would pass one of them (``annotation.red_team.budget``). A target without prices counts nothing.
    """

    round = models.OneToOneField("tasks.Round", on_delete=models.CASCADE, related_name="budget")
    cap = models.DecimalField(
        max_digits=14, decimal_places=6, help_text="The round's cap (the prices' currency)."
    )
    per_person = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True, help_text="One writer's cap; blank: none."
    )
    per_day = models.DecimalField(
        max_digits=14,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="The round's cap per UTC day; blank: none.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(cap__gte=0), name="round_budget_cap_not_negative"),
            models.CheckConstraint(
                condition=Q(per_person__isnull=True) | Q(per_person__gte=0),
                name="round_budget_per_person_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(per_day__isnull=True) | Q(per_day__gte=0),
                name="round_budget_per_day_not_negative",
            ),
        ]

    def __str__(self) -> str:
        # Plain digits: the admin's "was added" message echoed a cap typed as 1e2 as "1E+2".
        return (
            f"budget of {self.round}: {self.cap.normalize():f}"
            if self.cap is not None
            else f"budget of {self.round}"
        )


class BudgetCharge(models.Model):
    """What one turn holds of its round's budget: ``reserved`` (the worst case, taken before the model is
    called: the prompt's most tokens and the whole token budget at the target's prices) until the answer
    ends, then ``spent`` (its cost from the counted tokens; the reservation when the server counted none).
    A turn's charge is ``spent`` once settled, ``reserved`` before."""

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="charge")
    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="budget_charges")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="budget_charges"
    )
    day = models.DateField(help_text="The UTC day the turn was sent.")
    reserved = models.DecimalField(max_digits=14, decimal_places=6)
    spent = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["round", "annotator"]), models.Index(fields=["round", "day"])]

    def __str__(self) -> str:
        return f"charge of turn {self.turn_id}: {self.spent if self.spent is not None else self.reserved}"


class ArmAssignment(models.Model):
    """The arm of a round's annotation-assistant study a person was given when they first came to write
    (docs/domain.md, "Annotation assistants"): chosen by the server from the task's ``assistant.arms`` in
    permuted blocks of their shares (``annotation.assistant.arms``), never by the person, and kept for
    the round. ``position``: the order of joining (0 first), which places them in a block."""

    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="arm_assignments")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    arm = models.CharField(max_length=40)
    position = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["round", "worker"], name="arm_one_per_round_and_worker"),
            models.UniqueConstraint(fields=["round", "position"], name="arm_one_per_round_and_position"),
        ]

    def __str__(self) -> str:
        return f"{self.worker} in arm {self.arm} of {self.round}"


class Suggestion(models.Model):
    """A candidate example an annotation assistant proposed to one person (``annotation.assistant``):
    the text, the label it was asked for, how long it took, and, once the person submits an example
    that took it, that example and the edit distance from the proposal to what they sent (Levenshtein
    over code points: 0 kept as it was)."""

    round = models.ForeignKey("tasks.Round", on_delete=models.CASCADE, related_name="suggestions")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    arm = models.CharField(max_length=40)
    model = models.ForeignKey(
        "models_registry.RegisteredModel", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    context = models.ForeignKey(
        "tasks.Context", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    label = models.CharField(max_length=100, blank=True, help_text="The label it was asked for, if any.")
    text = models.TextField()
    seconds = models.FloatField(help_text="How long the assistant took, in seconds.")
    example = models.OneToOneField(
        Example, null=True, blank=True, on_delete=models.SET_NULL, related_name="suggestion"
    )
    kept_distance = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["round", "worker"])]

    def __str__(self) -> str:
        return f"suggestion {self.pk} to {self.worker} ({self.arm})"
