"""Task configs: the JSON document that defines a task (Dynatask, Thrush et al. 2022).

A config names the context fields shown to the annotator, the input fields they write, the target
field (the label or answer they intend), the model-wrong rule, the perf metric and limits. Forms,
model input and export are derived from it, so a new task needs a config, not code.

``validate_config(config)`` checks a config against ``CONFIG_SCHEMA`` (JSON Schema draft 2020-12)
plus the cross-field rules a schema cannot express, and raises ``django.core.exceptions.ValidationError``
with one message per problem, each prefixed by the JSON path of the offending value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.core.exceptions import ValidationError
from jsonschema import Draft202012Validator

from core.reliability import TENTATIVE

DEFAULT_MAX_INPUT_LENGTH = 2000
DEFAULT_CLOSE_CALL_MARGIN = 0.2

#: When a quiz attempt's result shows each question's verdict, right answer and explanation
#: (``quiz.reveal_answers``; docs/crowd.md, "Qualification"): on every attempt, once the worker has no
#: attempt to come (a pass, or the last allowed attempt failed), or never.
QUIZ_REVEAL_ALWAYS = "always"
QUIZ_REVEAL_AFTER_LAST_ATTEMPT = "after_last_attempt"
QUIZ_REVEAL_NEVER = "never"
QUIZ_REVEAL_CHOICES = (QUIZ_REVEAL_NEVER, QUIZ_REVEAL_AFTER_LAST_ATTEMPT, QUIZ_REVEAL_ALWAYS)
DEFAULT_QUIZ_REVEAL = QUIZ_REVEAL_AFTER_LAST_ATTEMPT

_FIELD = {
    "type": "object",
    "required": ["name", "type"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,39}$"},
        "type": {"enum": ["string", "multiclass", "context_span", "probabilities", "generation"]},
        "label": {"type": "string", "maxLength": 200},
        "help": {"type": "string", "maxLength": 2000},
        "placeholder": {"type": "string", "maxLength": 500},
        "labels": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 100},
            "minItems": 2,
        },
        "context_field": {"type": "string"},
        "max_length": {"type": "integer", "minimum": 1, "maximum": 100000},
        "optional": {"type": "boolean"},
    },
}

CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["input_fields", "target_field", "model_wrong_rule", "perf_metric"],
    "additionalProperties": False,
    "properties": {
        "context_fields": {"type": "array", "items": _FIELD},
        "input_fields": {"type": "array", "items": _FIELD, "minItems": 1},
        "target_field": _FIELD,
        "model_input_fields": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        "model_wrong_rule": {
            "type": "object",
            "required": ["type"],
            "additionalProperties": False,
            "properties": {
                "type": {"enum": ["exact_match", "string_f1", "ask_user", "rubric"]},
                "threshold": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            },
        },
        "ensemble_rule": {"enum": ["any", "all", "majority"]},
        "perf_metric": {"enum": ["accuracy", "macro_f1", "squad_f1", "exact_match"]},
        "delta_metrics": {
            "type": "array",
            "items": {"enum": ["fairness", "robustness"]},
            "uniqueItems": True,
        },
        "default_metric_weights": {
            "type": "object",
            "additionalProperties": {"type": "number", "minimum": 0},
        },
        "memory_ceiling_gib": {"type": "number", "exclusiveMinimum": 0},
        "validate_non_fooling": {"type": "boolean"},
        "validation_shows_model_answer": {"type": "boolean"},
        "content_warning": {"type": "string", "maxLength": 5000},
        # The create and outcome pages say "close call" when the model's top two probabilities differ
        # by less than this (default 0.2).
        "close_call_margin": {"type": "number", "minimum": 0, "maximum": 1},
        # One definition per target label, shown beside the label choices and in the instructions.
        "label_descriptions": {
            "type": "object",
            "additionalProperties": {"type": "string", "minLength": 1, "maxLength": 1000},
        },
        "licence": {"type": "string", "maxLength": 200},
        # The qualification quiz's options (its questions, pass mark and attempts are the Quiz admin's).
        "quiz": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"reveal_answers": {"enum": list(QUIZ_REVEAL_CHOICES)}},
        },
        "limits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"max_input_length": {"type": "integer", "minimum": 1, "maximum": 100000}},
        },
        # Generative annotation assistants (docs/domain.md, "Annotation assistants"): the arms of the
        # round's study, each with its share; an arm with a model proposes examples from its prompt.
        "assistant": {
            "type": "object",
            "required": ["arms"],
            "additionalProperties": False,
            "properties": {
                "arms": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 6,
                    "items": {
                        "type": "object",
                        "required": ["name", "share"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,39}$"},
                            "share": {"type": "integer", "minimum": 1, "maximum": 20},
                            "model": {
                                "type": "string",
                                "minLength": 3,
                                "maxLength": 300,
                                "pattern": "^[^/]+/.+$",
                            },
                            "prompt": {"type": "string", "minLength": 1, "maxLength": 4000},
                            "max_new_tokens": {"type": "integer", "minimum": 8, "maximum": 512},
                        },
                    },
                },
            },
        },
        # Uncertainty mode (tasks/uncertainty.py; docs/domain.md, "Uncertainty mode"): the annotator's
        # goal is an example on which the target is unsure, by ``measure`` against ``threshold``.
        "uncertainty": {
            "type": "object",
            "required": ["measure", "threshold"],
            "additionalProperties": False,
            "properties": {
                "measure": {"enum": ["top_probability", "entropy"]},
                "threshold": {"type": "number"},
            },
        },
    },
}

_NAME = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,39}$"}
_TEXT = {"type": "string", "minLength": 1, "maxLength": 2000}
#: Red-teaming a generative target (docs/generative.md, "Red-teaming tasks"): the target field is
#: ``generation`` and the model-wrong rule ``rubric``. ``modes``: the annotator holds a conversation of up
#: to ``max_turns`` turns and answers the rubric, and/or writes a multiple-choice item with hard negatives.
RED_TEAM_MODES = ("conversation", "multiple_choice")
#: The most models that answer one first message side by side (``red_team.side_by_side.models``): PRISM
#: showed four; more do not fit a page beside each other.
MAX_SIDE_BY_SIDE = 4
CONFIG_SCHEMA["properties"]["red_team"] = {
    "type": "object",
    "required": ["goal", "modes", "categories", "rubric"],
    "additionalProperties": False,
    "properties": {
        "goal": {"type": "string", "minLength": 1, "maxLength": 5000},
        "modes": {
            "type": "array",
            "items": {"enum": list(RED_TEAM_MODES)},
            "minItems": 1,
            "uniqueItems": True,
        },
        "max_turns": {"type": "integer", "minimum": 1, "maximum": 20},
        "categories": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "label"],
                "additionalProperties": False,
                "properties": {"name": _NAME, "label": _TEXT, "description": _TEXT},
            },
        },
        "rubric": {
            "type": "array",
            "minItems": 1,
            "maxItems": 10,
            "items": {
                "type": "object",
                "required": ["name", "question", "answers", "failure_answers"],
                "additionalProperties": False,
                "properties": {
                    "name": _NAME,
                    "question": _TEXT,
                    "help": _TEXT,
                    "answers": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": 100},
                        "minItems": 2,
                        "maxItems": 11,
                        "uniqueItems": True,
                    },
                    "failure_answers": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "uniqueItems": True,
                    },
                    # How validators' answers are compared for agreement (Krippendorff's alpha):
                    # nominal, or ordinal in the answers' order; default ordinal when every answer is a
                    # number (a scale), else nominal.
                    "level": {"enum": ["nominal", "ordinal"]},
                },
            },
        },
        # The lowest acceptable lower end of a rubric question's alpha interval (default 0.667,
        # Krippendorff's lowest for tentative conclusions): below it, the rates it bears on are greyed.
        "agreement_floor": {"type": "number", "minimum": 0, "maximum": 1},
        # The arena: votes a model needs since its answers last changed before its rating is no longer
        # provisional (default 300).
        "arena_min_votes": {"type": "integer", "minimum": 1, "maximum": 1000000},
        # The arena's anonymity check (core.self_identification): what to do with an answer that names a
        # model ("regenerate": ask that model once more, then mark; "mark": keep the battle, its vote
        # counted apart), and the owner's own terms beside the maintained list and the models' names.
        "arena_on_identity": {"enum": ["regenerate", "mark"]},
        "arena_identity_terms": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "[A-Za-z0-9]"},
            "maxItems": 500,
            "uniqueItems": True,
        },
        # Several models in one conversation (docs/generative.md, "Several models in one conversation"):
        # the first message is answered by ``models`` of the round's ready targets drawn at random, shown
        # side by side without names; the writer rates each and goes on with the one they choose.
        "side_by_side": {
            "type": "object",
            "required": ["models"],
            "additionalProperties": False,
            "properties": {"models": {"type": "integer", "minimum": 2, "maximum": MAX_SIDE_BY_SIDE}},
        },
        "multiple_choice": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "min_negatives": {"type": "integer", "minimum": 1, "maximum": 9},
                "max_options": {"type": "integer", "minimum": 2, "maximum": 10},
            },
        },
    },
}
DEFAULT_MAX_TURNS = 3
DEFAULT_MIN_NEGATIVES = 2
#: Arena votes a model needs since its answers last changed before its rating is not provisional.
DEFAULT_ARENA_MIN_VOTES = 300
DEFAULT_MAX_OPTIONS = 6

_VALIDATOR = Draft202012Validator(CONFIG_SCHEMA)


def _path(error) -> str:
    return "config" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)


def _non_finite(value: Any, path: str = "config") -> str | None:
    """The path of the first NaN or infinite number in ``value`` (nested dicts and lists), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, dict):
        items = ((f"{path}[{k!r}]", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for where, item in items:
        found = _non_finite(item, where)
        if found is not None:
            return found
    return None


def validate_config(config: Any) -> None:
    """Check a task config; raise ``ValidationError`` listing every problem found.

    Args:
        config: the decoded JSON document (normally a dict).

    Raises:
        ValidationError: with messages such as ``config['target_field']: 'labels' is a required property``.
    """
    if not isinstance(config, dict):
        raise ValidationError("The task config must be a JSON object.")
    # NaN and infinity are not JSON, but Python's json module reads them, and the schema's minimum and
    # maximum never refuse NaN (every comparison with it is false): refused here, for every number.
    where = _non_finite(config)
    if where is not None:
        raise ValidationError(f"{where}: NaN and infinity are not numbers a config may hold.")
    errors = [f"{_path(e)}: {e.message}" for e in sorted(_VALIDATOR.iter_errors(config), key=str)]
    if errors:
        raise ValidationError(errors)

    names = [f["name"] for f in config.get("context_fields", [])] + [
        f["name"] for f in config["input_fields"]
    ]
    target = config["target_field"]
    if len(set(names + [target["name"]])) != len(names) + 1:
        errors.append("config: field names must be unique across context, input and target fields.")
    if target["type"] == "multiclass":
        labels = target.get("labels", [])
        if len(labels) < 2:
            errors.append("config['target_field']: a multiclass target needs at least two labels.")
        elif len(set(labels)) != len(labels):
            errors.append("config['target_field']['labels']: labels must be unique.")
    elif target["type"] == "context_span":
        context_names = {f["name"] for f in config.get("context_fields", [])}
        if target.get("context_field") not in context_names:
            errors.append(
                "config['target_field']: a context_span target must name one of the context fields."
            )
    elif target["type"] != "generation":
        errors.append(
            "config['target_field']['type']: the target must be 'multiclass', 'context_span' or 'generation'."
        )
    errors.extend(_red_team_errors(config))
    errors.extend(_uncertainty_errors(config))
    errors.extend(_assistant_errors(config))
    has_labels = target["type"] != "multiclass" or len(target.get("labels", [])) >= 2
    for label in config.get("label_descriptions", {}) if has_labels else ():  # no labels: said above
        if label not in target.get("labels", []):
            errors.append(f"config['label_descriptions']: {label!r} is not one of the target's labels.")
    rule = config["model_wrong_rule"]["type"]
    if rule == "string_f1" and target["type"] != "context_span":
        errors.append("config['model_wrong_rule']: string_f1 applies to span (QA) targets only.")
    if rule == "exact_match" and target["type"] != "multiclass":
        errors.append(
            "config['model_wrong_rule']: exact_match applies to label targets; use string_f1 for spans."
        )
    for name in config.get("model_input_fields", []):
        if name not in names:
            errors.append(f"config['model_input_fields']: {name!r} is not a context or input field.")
    if target["type"] == "context_span" and "model_input_fields" in config:
        # Span (QA) models read a (passage, question) pair and answer with a span of the passage.
        given = config["model_input_fields"]
        input_names = {f["name"] for f in config["input_fields"]}
        if len(given) != 2 or given[0] != target.get("context_field") or given[1] not in input_names:
            errors.append(
                "config['model_input_fields']: a context_span target's model reads a (passage, question) "
                f"pair, so this must be [{target.get('context_field')!r}, <an input field>]; "
                "leave it out to use the span's context field and the first input field."
            )
    if errors:
        raise ValidationError(errors)


def _red_team_errors(config: dict) -> list[str]:
    """The cross-field rules of a red-teaming config: a ``generation`` target, the ``rubric`` rule and
    the ``red_team`` section go together; names are unique; each question's failure answers are some,
    not all, of its answers; multiple choice offers room for the answer and its negatives."""
    generative = config["target_field"]["type"] == "generation"
    rubric_rule = config["model_wrong_rule"]["type"] == "rubric"
    section = config.get("red_team")
    if not (generative == rubric_rule == (section is not None)):
        return [
            "config: a red-teaming task has all three of target_field type 'generation', model_wrong_rule "
            "'rubric' and a 'red_team' section; other tasks have none of them."
        ]
    if section is None:
        return []
    errors = []
    for key in ("categories", "rubric"):
        names = [item["name"] for item in section[key]]
        if len(set(names)) != len(names):
            errors.append(f"config['red_team']['{key}']: names must be unique.")
    for i, question in enumerate(section["rubric"]):
        failures, answers = set(question["failure_answers"]), set(question["answers"])
        if not failures <= answers:
            unknown = ", ".join(repr(a) for a in sorted(failures - answers))
            errors.append(
                f"config['red_team']['rubric'][{i}]: failure answers {unknown} are not among its answers."
            )
        elif failures == answers:
            errors.append(f"config['red_team']['rubric'][{i}]: not every answer can be a failure.")
    choice = section.get("multiple_choice", {})
    negatives = choice.get("min_negatives", DEFAULT_MIN_NEGATIVES)
    if negatives + 1 > choice.get("max_options", DEFAULT_MAX_OPTIONS):
        errors.append(
            "config['red_team']['multiple_choice']: max_options must leave room for the answer and "
            f"{negatives} negatives."
        )
    if "side_by_side" in section and "conversation" not in section["modes"]:
        errors.append(
            "config['red_team']['side_by_side']: several models answer a conversation's first message, so "
            "the task's modes must include 'conversation'."
        )
    return errors


def _uncertainty_errors(config: dict) -> list[str]:
    """The cross-field rules of uncertainty mode (``tasks.uncertainty.threshold_problem``): a label or
    span target, a measure the target has, and a threshold the target can fall on either side of."""
    section = config.get("uncertainty")
    if section is None:
        return []
    from .uncertainty import threshold_problem

    target = config["target_field"]
    if target["type"] not in ("multiclass", "context_span"):
        return [
            "config['uncertainty']: uncertainty mode is for label (multiclass) and span (context_span) "
            "targets; a generative target is red-teamed with its rubric."
        ]
    problem = threshold_problem(
        section["measure"], section["threshold"], span=target["type"] == "context_span",
        n_labels=len(target.get("labels", [])),
    )  # fmt: skip
    return [f"config['uncertainty']: {problem}"] if problem else []


#: What an assistant's prompt may name (``tasks.assistant.render_prompt``).
ASSISTANT_PLACEHOLDERS = ("context", "label", "labels", "instructions")


def _assistant_errors(config: dict) -> list[str]:
    """The cross-field rules of ``assistant``: a label or span task; unique arm names; an arm's model and
    prompt together; at least one arm with an assistant; a prompt naming only ``ASSISTANT_PLACEHOLDERS``.
    Whether each model exists and writes text is checked against the registry where the config is
    saved (``tasks.config_checks``)."""
    section = config.get("assistant")
    if section is None:
        return []
    if config["target_field"]["type"] not in ("multiclass", "context_span"):
        return [
            "config['assistant']: annotation assistants are for label (multiclass) and span (context_span) "
            "tasks; a red-teaming task's people talk with the model itself."
        ]
    import string

    errors = []
    arms = section["arms"]
    names = [arm["name"] for arm in arms]
    if len(set(names)) != len(names):
        errors.append("config['assistant']['arms']: arm names must be unique.")
    if not any("model" in arm for arm in arms):
        errors.append("config['assistant']['arms']: at least one arm needs a model (its assistant).")
    for i, arm in enumerate(arms):
        where = f"config['assistant']['arms'][{i}]"
        if ("model" in arm) != ("prompt" in arm):
            errors.append(
                f"{where}: an arm with an assistant has both 'model' and 'prompt'; an arm without has neither."
            )
            continue
        if "prompt" not in arm:
            continue
        try:
            parts = [
                (f, spec, conv)
                for _, f, spec, conv in string.Formatter().parse(arm["prompt"])
                if f is not None
            ]
        except ValueError as exc:
            errors.append(f"{where}['prompt']: {exc} (write a brace as {{{{ or }}}}).")
            continue
        if any(spec or conv for _, spec, conv in parts):
            errors.append(
                f"{where}['prompt']: a placeholder takes no format spec or conversion (write {{label}}, "
                "not {label:...} or {label!r})."
            )
            continue
        fields = [f for f, _, _ in parts]
        unknown = sorted({f for f in fields if f not in ASSISTANT_PLACEHOLDERS})
        if unknown:
            errors.append(
                f"{where}['prompt']: unknown placeholder(s) {', '.join('{' + f + '}' for f in unknown)}; "
                f"a prompt may name {', '.join('{' + f + '}' for f in ASSISTANT_PLACEHOLDERS)}."
            )
    return errors


class TaskKind(StrEnum):
    """What a task's examples are, read once from its target field's type; an app that treats kinds
    differently keeps one table per kind, keyed by this value (docs/architecture.md, "Where a new thing
    goes"), rather than testing the config in each function."""

    CLASSIFICATION = "classification"
    """A label from the config's list (target type ``multiclass``): hate speech, sentiment, NLI."""
    SPAN = "span"
    """A span of the context (target type ``context_span``): extractive QA."""
    GENERATION = "generation"
    """A conversation with a generative target judged with a rubric (target type ``generation``): red
    teaming."""


_KIND_OF_TARGET = {
    "multiclass": TaskKind.CLASSIFICATION,
    "context_span": TaskKind.SPAN,
    "generation": TaskKind.GENERATION,
}


@dataclass(frozen=True)
class TaskConfig:
    """Typed read access to a validated config dict. Construct with ``TaskConfig(task.config)``."""

    raw: dict

    @property
    def context_fields(self) -> list[dict]:
        return list(self.raw.get("context_fields", []))

    @property
    def context_required(self) -> bool:
        """True when an example is written on a context: the task has a context field not marked
        ``optional`` (a title alone may be optional; a passage, a premise is not). Sentiment's optional
        prompt can be left out."""
        return any(not spec.get("optional", False) for spec in self.context_fields)

    @property
    def input_fields(self) -> list[dict]:
        return list(self.raw["input_fields"])

    @property
    def target_field(self) -> dict:
        return self.raw["target_field"]

    @property
    def labels(self) -> list[str]:
        """The target labels, in the order the model's output indices use; empty for span targets."""
        return list(self.target_field.get("labels", []))

    @property
    def model_wrong_rule(self) -> str:
        return self.raw["model_wrong_rule"]["type"]

    @property
    def string_f1_threshold(self) -> float:
        return float(self.raw["model_wrong_rule"].get("threshold", 0.4))

    @property
    def ensemble_rule(self) -> str:
        return self.raw.get("ensemble_rule", "any")

    @property
    def perf_metric(self) -> str:
        return self.raw["perf_metric"]

    @property
    def max_input_length(self) -> int:
        return int(self.raw.get("limits", {}).get("max_input_length", DEFAULT_MAX_INPUT_LENGTH))

    def max_length_of(self, field: dict) -> int:
        """Maximum characters for one input field: its own ``max_length``, else the task limit."""
        return int(field.get("max_length", self.max_input_length))

    @property
    def model_input_fields(self) -> list[str]:
        """Fields whose text the model reads (one: single text; two: a text pair such as premise, hypothesis).

        Without an explicit ``model_input_fields``: for a ``context_span`` (QA) target the pair
        (the span's ``context_field``, the first input field), e.g. ``["context", "question"]``, which is
        what *ForQuestionAnswering models read; otherwise the first input field alone.
        """
        if "model_input_fields" in self.raw:
            return list(self.raw["model_input_fields"])
        if self.target_field.get("type") == "context_span":
            return [self.target_field["context_field"], self.input_fields[0]["name"]]
        return [self.input_fields[0]["name"]]

    @property
    def kind(self) -> TaskKind:
        """The task's kind (``TaskKind``), from its target field's type.

        Raises:
            ValueError: a target type no kind has (``validate_config`` refuses such a config).
        """
        try:
            return _KIND_OF_TARGET[self.target_field.get("type")]
        except KeyError:
            raise ValueError(f"no task kind has the target type {self.target_field.get('type')!r}") from None

    @property
    def red_team(self) -> dict:
        """The ``red_team`` section (empty for other tasks)."""
        return dict(self.raw.get("red_team", {}))

    @property
    def red_team_modes(self) -> list[str]:
        return list(self.red_team.get("modes", []))

    @property
    def max_turns(self) -> int:
        """The most user turns of one conversation (``red_team.max_turns``, default 3)."""
        return int(self.red_team.get("max_turns", DEFAULT_MAX_TURNS))

    @property
    def side_by_side(self) -> int | None:
        """How many models answer a conversation's first message side by side (``red_team.side_by_side.
        models``, 2 to ``MAX_SIDE_BY_SIDE``), or None when one target answers it (the default)."""
        section = self.red_team.get("side_by_side")
        return int(section["models"]) if section else None

    @property
    def failure_categories(self) -> list[dict]:
        """``[{"name", "label", "description"?}]``: the taxonomy the annotator tags a failure with."""
        return list(self.red_team.get("categories", []))

    @property
    def rubric(self):
        """The task's ``Rubric`` (tasks/rubric.py); raises ``KeyError`` for a task that has none."""
        from tasks.rubric import Rubric

        return Rubric.from_config(self.raw["red_team"]["rubric"])

    @property
    def agreement_floor(self) -> float:
        """The floor of a rubric question's alpha interval (``red_team.agreement_floor``, default
        ``core.reliability.TENTATIVE`` = 0.667)."""
        return float(self.red_team.get("agreement_floor", TENTATIVE))

    @property
    def arena_min_votes(self) -> int:
        """Votes since a model's answers last changed before its arena rating stops being provisional
        (``red_team.arena_min_votes``, default ``DEFAULT_ARENA_MIN_VOTES`` = 300)."""
        return int(self.red_team.get("arena_min_votes", DEFAULT_ARENA_MIN_VOTES))

    @property
    def arena_on_identity(self) -> str:
        """What the arena does with an answer that names a model (``red_team.arena_on_identity``):
        ``"regenerate"`` (the default: ask that model once more, then mark the battle) or ``"mark"``."""
        return str(self.red_team.get("arena_on_identity", "regenerate"))

    @property
    def arena_identity_terms(self) -> list[str]:
        """The owner's own terms for the arena's anonymity check (``red_team.arena_identity_terms``), []
        by default; ``core.self_identification.MAINTAINED_TERMS`` and the models' names are always used."""
        return list(self.red_team.get("arena_identity_terms", []))

    @property
    def min_negatives(self) -> int:
        return int(self.red_team.get("multiple_choice", {}).get("min_negatives", DEFAULT_MIN_NEGATIVES))

    @property
    def max_options(self) -> int:
        return int(self.red_team.get("multiple_choice", {}).get("max_options", DEFAULT_MAX_OPTIONS))

    @property
    def uncertainty(self):
        """The task's ``tasks.uncertainty.UncertaintyGoal`` in uncertainty mode (config ``uncertainty``),
        else None: the goal is then to fool the target."""
        section = self.raw.get("uncertainty")
        if section is None:
            return None
        from .uncertainty import UncertaintyGoal

        return UncertaintyGoal(measure=section["measure"], threshold=float(section["threshold"]))

    @property
    def assistant_arms(self) -> list[dict]:
        """The arms of the task's annotation-assistant study (config ``assistant.arms``: ``{"name",
        "share", "model"?, "prompt"?, "max_new_tokens"?}``), [] when the task has none."""
        return [dict(arm) for arm in self.raw.get("assistant", {}).get("arms", [])]

    @property
    def content_warning(self) -> str:
        return self.raw.get("content_warning", "")

    @property
    def close_call_margin(self) -> float:
        """A prediction is a "close call" when its top two probabilities differ by less than this
        (``close_call_margin``, in [0, 1]; default 0.2)."""
        return float(self.raw.get("close_call_margin", DEFAULT_CLOSE_CALL_MARGIN))

    @property
    def label_descriptions(self) -> dict[str, str]:
        """``{label: definition}`` for the labels that have one (``label_descriptions``; may be empty)."""
        return dict(self.raw.get("label_descriptions", {}))

    @property
    def validate_non_fooling(self) -> bool:
        return bool(self.raw.get("validate_non_fooling", False))

    @property
    def validation_shows_model_answer(self) -> bool:
        """True: the validate page shows the model's answer at once; default False, behind "Show the
        model's answer" so a validator judges the example before seeing what the model said."""
        return bool(self.raw.get("validation_shows_model_answer", False))

    @property
    def quiz_reveal_answers(self) -> str:
        """When a quiz attempt's result shows each question's verdict, right answer and explanation
        (``quiz.reveal_answers``): ``"always"``, ``"after_last_attempt"`` (the default: after a pass or
        the last allowed attempt, never while the worker may try again) or ``"never"``."""
        return self.raw.get("quiz", {}).get("reveal_answers", DEFAULT_QUIZ_REVEAL)

    @property
    def licence(self) -> str:
        """The data licence shown on the task page and carried by exports (e.g. ``CC BY-NC 4.0 ...``)."""
        return self.raw.get("licence", "")

    @property
    def is_non_commercial(self) -> bool:
        """True when the licence restricts use to non-commercial purposes (a ``-NC`` Creative Commons licence)."""
        text = self.licence.upper()
        return "-NC" in text or "NON-COMMERCIAL" in text or "NONCOMMERCIAL" in text
