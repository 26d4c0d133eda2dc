"""Serializers of the model API (``models_registry.api``): model cards, uploads and predictions.

The card follows the model page (``leaderboards.views._card``): an anonymous model is shown to anyone
but its owner, the task's owners and superusers as "Anonymous model N", with no owner and no paper
link. A failure message is shown to those who manage the model only (it names server paths).
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.bodies import RejectUnknownFieldsMixin, StrictBooleanField
from core.text_rules import model_text_problem, normalise_newlines
from engine.explain.attributions import MAX_EXPLAIN_INPUTS
from engine.runtime import runtimes
from models_registry.models import RegisteredModel
from models_registry.names import model_name_problem
from models_registry.runtime_facts import is_remote
from models_registry.selectors import anonymous_numbers, card_training_text, sees_real_identity
from tasks.models import Task

#: How many input objects one predict call may carry (a bound on the server's work per request).
MAX_PREDICT_INPUTS = 64


class ViewerContext:
    """What the card serializer needs to know about the caller, computed once per request.

    ``owned_task_ids``: the tasks the caller owns (every task for a superuser is handled by
    ``is_task_owner``); ``numbers``: per task id, model id -> N of "Anonymous model N", filled lazily.
    """

    def __init__(self, user) -> None:
        self.user = user
        self.superuser = bool(user.is_authenticated and user.is_superuser)
        self.owned_task_ids: set[int] = (
            set(Task.objects.filter(owners=user).values_list("pk", flat=True))
            if user.is_authenticated
            else set()
        )
        self._numbers: dict[int, dict[int, int]] = {}

    def is_task_owner(self, task_id: int) -> bool:
        return self.superuser or task_id in self.owned_task_ids

    def manages(self, model: RegisteredModel) -> bool:
        """The model's owner, its task's owners and superusers manage it (and see its failure message)."""
        user = self.user
        return bool(
            user.is_authenticated and (model.owner_id == user.pk or self.is_task_owner(model.task_id))
        )

    def sees_identity(self, model: RegisteredModel) -> bool:
        return sees_real_identity(self.user, model, self.is_task_owner(model.task_id))

    def anonymous_number(self, model: RegisteredModel) -> int | None:
        if model.task_id not in self._numbers:
            self._numbers[model.task_id] = anonymous_numbers(model.task)
        return self._numbers[model.task_id].get(model.pk)


def viewer_context(request) -> ViewerContext:
    """The request's ``ViewerContext``, built on first use and kept on the request."""
    viewer = getattr(request, "_dynabench_viewer", None)
    if viewer is None:
        viewer = ViewerContext(request.user)
        request._dynabench_viewer = viewer
    return viewer


class ModelCardSerializer(serializers.ModelSerializer):
    """A registered model's card as the caller may see it (read only)."""

    name = serializers.SerializerMethodField(help_text='The model\'s name, or "Anonymous model N".')
    task = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    owner = serializers.SerializerMethodField(help_text="The owner's username; null when hidden or none.")
    licence = serializers.SerializerMethodField()
    training_data = serializers.SerializerMethodField()
    paper = serializers.SerializerMethodField(help_text="A http(s) link; empty when hidden or none.")
    description = serializers.SerializerMethodField()
    failure_message = serializers.SerializerMethodField(
        help_text="Why the check failed; shown to the model's and the task's owners only (else null)."
    )
    recheck = serializers.SerializerMethodField(
        help_text=(
            "A ready model checked again: `queued` or `running` (it keeps answering meanwhile; its "
            "status and runtime may change when the check ends); null otherwise."
        )
    )
    published = serializers.BooleanField(source="is_published", read_only=True)
    anonymous = serializers.BooleanField(source="is_anonymous", read_only=True)
    runtime = serializers.SerializerMethodField(
        help_text=(
            "The runtime the model is served on here: `torch`, `onnx-fp32` or `onnx-int8`; null for a "
            "remote model (`source` endpoint or chat_endpoint), which another machine serves."
        )
    )
    runtime_check = serializers.SerializerMethodField(
        help_text=(
            "How the ONNX export agreed with PyTorch on held-apart inputs (docs/onnx.md): runtime, "
            "preferred, checks per ONNX runtime (n, label_agreement or answer_agreement, "
            "max_probability_difference or max_score_difference, passed), message; null before any check."
        )
    )

    class Meta:
        model = RegisteredModel
        fields = [
            "id",
            "name",
            "task",
            "owner",
            "source",
            "backbone",
            "parameter_count",
            "runtime",
            "runtime_check",
            "licence",
            "training_data",
            "paper",
            "description",
            "status",
            "recheck",
            "failure_message",
            "published",
            "anonymous",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def _viewer(self) -> ViewerContext:
        return viewer_context(self.context["request"])

    @extend_schema_field(
        {
            "type": "string",
            "nullable": True,
            "enum": [runtimes.TORCH, runtimes.ONNX_FP32, runtimes.ONNX_INT8, None],
        }
    )
    def get_runtime(self, model: RegisteredModel) -> str | None:
        return None if is_remote(model) else model.runtime

    @extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True})
    def get_runtime_check(self, model: RegisteredModel) -> dict | None:
        block = (model.card or {}).get("runtime")
        return block if isinstance(block, dict) else None

    def get_name(self, model: RegisteredModel) -> str:
        viewer = self._viewer()
        if viewer.sees_identity(model):
            return model.name
        return f"Anonymous model {viewer.anonymous_number(model) or '?'}"

    def get_owner(self, model: RegisteredModel) -> str | None:
        if model.owner_id is None or not self._viewer().sees_identity(model):
            return None
        return model.owner.get_username()

    def _card_text(self, model: RegisteredModel, key: str) -> str:
        value = (model.card or {}).get(key, "")
        return value if isinstance(value, str) else ""

    def get_licence(self, model: RegisteredModel) -> str:
        return self._card_text(model, "licence")

    def get_training_data(self, model: RegisteredModel) -> str:
        return card_training_text(model, with_count=False)

    def get_paper(self, model: RegisteredModel) -> str:
        if not self._viewer().sees_identity(model):
            return ""
        card = model.card or {}
        paper = next((card.get(k) for k in ("paper_url", "paper_link", "paper") if card.get(k)), "")
        return paper if isinstance(paper, str) and paper.startswith(("https://", "http://")) else ""

    def get_description(self, model: RegisteredModel) -> str:
        return self._card_text(model, "description")

    @extend_schema_field({"type": "string", "enum": ["queued", "running"], "nullable": True})
    def get_recheck(self, model: RegisteredModel) -> str | None:
        return model.recheck or None

    def get_failure_message(self, model: RegisteredModel) -> str | None:
        return model.error_message if self._viewer().manages(model) else None


class ModelUploadSerializer(serializers.Serializer):
    """``POST /api/models/`` (multipart): a zip of a ``save_pretrained`` directory and its card."""

    task = serializers.SlugField(max_length=60, help_text="Slug of the task the model answers.")
    name = serializers.CharField(max_length=200, help_text="Unique within the task.")
    file = serializers.FileField(
        help_text="Zip of the files of model.save_pretrained() and tokenizer.save_pretrained() (safetensors)."
    )
    backbone = serializers.CharField(max_length=200, required=False, allow_blank=True)
    licence = serializers.CharField(max_length=200, required=False, allow_blank=True)
    training_data = serializers.CharField(max_length=5000, required=False, allow_blank=True)
    paper_link = serializers.URLField(max_length=500, required=False, allow_blank=True)
    description = serializers.CharField(max_length=5000, required=False, allow_blank=True)
    allow_pickle = serializers.BooleanField(
        default=False, help_text="Accept pickle checkpoints (pytorch_model.bin); task owners only."
    )
    published = serializers.BooleanField(
        default=False, help_text="Show the model on the leaderboard to everyone (default: only to you)."
    )
    anonymous = serializers.BooleanField(default=False, help_text='Show it as "Anonymous model N" to others.')

    def validate_task(self, slug: str) -> Task:
        task = Task.objects.filter(slug=slug, is_active=True).first()
        if task is None:
            raise serializers.ValidationError(f"There is no active task {slug!r}.")
        return task

    def validate_name(self, name: str) -> str:
        name = name.strip()
        if not name:
            raise serializers.ValidationError("A model needs a name.")
        problem = model_name_problem(name)
        if problem:
            raise serializers.ValidationError(problem)
        return name

    def validate_file(self, upload):
        if not (upload.name or "").lower().endswith(".zip"):
            raise serializers.ValidationError("Upload a .zip file.")
        return upload

    def card(self) -> dict:
        """The card fields as ``RegisteredModel.card`` (empty ones left out)."""
        keys = ("backbone", "licence", "training_data", "paper_link", "description")
        return {key: self.validated_data[key] for key in keys if self.validated_data.get(key)}


def upload_limit() -> int:
    """``DYNABENCH_MODEL_UPLOAD_MAX_BYTES``: the largest zip accepted (and the largest unpacked size)."""
    return int(settings.DYNABENCH_MODEL_UPLOAD_MAX_BYTES)


class TextField(serializers.CharField):
    """A string as sent: a number or a boolean is refused rather than turned into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class PredictSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """``{"inputs": [{field: text, ...}, ...], "explain": false}``: 1 to ``MAX_PREDICT_INPUTS`` input
    objects (1 to ``MAX_EXPLAIN_INPUTS`` with ``"explain": true``).

    Each object is keyed by the task's model input field names (``config.model_input_fields``, e.g.
    ``statement``); other keys are ignored. Texts are non-blank strings within the field's length limit.
    """

    inputs = serializers.ListField(
        child=serializers.DictField(child=TextField(allow_blank=True, trim_whitespace=False)),
        min_length=1,
        max_length=MAX_PREDICT_INPUTS,
    )
    explain = StrictBooleanField(
        required=False,
        default=False,
        help_text="Also explain each classifier answer with token attributions (integrated gradients; "
        f"docs/attributions.md); at most {MAX_EXPLAIN_INPUTS} inputs then.",
    )

    def validate(self, attrs: dict) -> dict:
        """Refuse ``explain`` with more than ``MAX_EXPLAIN_INPUTS`` inputs (each costs 50 backward passes)."""
        if attrs.get("explain") and len(attrs.get("inputs") or []) > MAX_EXPLAIN_INPUTS:
            raise serializers.ValidationError(
                {
                    "explain": [
                        f"At most {MAX_EXPLAIN_INPUTS} inputs can be explained in one call "
                        f"(this has {len(attrs['inputs'])})."
                    ]
                }
            )
        return attrs

    def validate_inputs(self, inputs: list[dict]) -> list[dict]:
        cfg = self.context["task"].cfg
        specs = {f["name"]: f for f in cfg.context_fields + cfg.input_fields}
        fields = cfg.model_input_fields
        errors: dict[str, dict[str, list[str]]] = {}
        cleaned = []
        for n, item in enumerate(inputs):
            problems: dict[str, list[str]] = {}
            row = {}
            for name in fields:
                value = item.get(name)
                limit = cfg.max_length_of(specs.get(name, {}))
                if value is None:
                    problems[name] = [f"This field is required (the model reads {fields})."]
                elif not value.strip():
                    problems[name] = ["Type some text for the model."]
                elif problem := model_text_problem(normalise_newlines(value), "The text", limit):
                    problems[name] = [problem]  # the length counted after CRLF -> LF, as on the create page
                else:
                    row[name] = normalise_newlines(value)
            if problems:
                errors[str(n)] = problems
            cleaned.append(row)
        if errors:
            raise serializers.ValidationError(errors)
        return cleaned


def _scored_span_schema(text_key: str) -> dict:
    """The OpenAPI schema of one scored span of an explanation: ``text_key`` (``token`` or ``word``), its
    code-point ``start``/``end`` in ``field``, and its ``score``."""
    return {
        "type": "object",
        "required": [text_key, "start", "end", "score", "field"],
        "properties": {
            text_key: {"type": "string"},
            "start": {"type": "integer"},
            "end": {"type": "integer"},
            "score": {"type": "number"},
            "field": {"type": "string"},
        },
    }


#: The keys ``"explain": true`` adds to each output (``attributions.Explanation.as_api``).
EXPLANATION_PROPERTIES = {
    "attributions": {
        "type": "array",
        "nullable": True,
        "description": "With `explain`: one entry per highlighted span of the input text (special tokens "
        "and padding excluded; an emoji's name tokens summed onto the emoji), `start`/`end` in code "
        "points into the text of `field` as sent; `score` in logit units, > 0 pushed towards "
        "`target_label`. null when no explanation is available (`explanation_unavailable` says why).",
        "items": _scored_span_schema("token"),
    },
    "words": {
        "type": "array",
        "nullable": True,
        "description": "With `explain`: the same attributions per whole word of the text as sent (cut at "
        "Unicode word boundaries, punctuation joined to the word it touches, an emoji alone), each "
        "`score` the sum of its tokens' scores, so they too sum to `attribution_sum`. Absent when "
        "`attributions` is null.",
        "items": _scored_span_schema("word"),
    },
    "explanation_unavailable": {"type": "string", "description": "Why there are no attributions."},
    "target_label": {"type": "string", "description": "The label whose logit is attributed."},
    "logit_input": {"type": "number", "description": "The target's logit at the input, F(x)."},
    "logit_baseline": {"type": "number", "description": "The target's logit at the baseline, F(x')."},
    "attribution_sum": {"type": "number", "description": "Sum of all attributions (= F(x) - F(x'))."},
    "convergence_delta": {"type": "number", "description": "attribution_sum - (F(x) - F(x'))."},
    "tolerance": {"type": "number", "description": "The bound on abs(convergence_delta)."},
    "n_steps": {"type": "integer", "description": "Integration points used."},
    "truncated": {"type": "boolean", "description": "The text was longer than the model reads."},
}

OUTPUT_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "description": "A classifier's answer: the label and every label's probability (they sum to 1).",
            "required": ["label", "probabilities"],
            "properties": {
                "label": {"type": "string"},
                "probabilities": {"type": "object", "additionalProperties": {"type": "number"}},
                **EXPLANATION_PROPERTIES,
            },
        },
        {
            "type": "object",
            "description": "An extractive QA model's answer: the text, where it starts (code points into "
            "the passage) and its score.",
            "required": ["answer", "score"],
            "properties": {
                "answer": {"type": "string"},
                "answer_start": {"type": "integer"},
                "score": {"type": "number"},
                **EXPLANATION_PROPERTIES,
            },
        },
    ]
}


@extend_schema_field(OUTPUT_SCHEMA)
class ModelOutputField(serializers.DictField):
    """One model output: ``{label, probabilities}`` or ``{answer, answer_start, score}``."""


class PredictResponseSerializer(serializers.Serializer):
    """``{"model": id, "outputs": [...]}``: one output per input, in order."""

    model = serializers.IntegerField()
    outputs = serializers.ListField(child=ModelOutputField())


class ModelErrorSerializer(serializers.Serializer):
    """An error answer: ``{"detail": "..."}``."""

    detail = serializers.CharField()
