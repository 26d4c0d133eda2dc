"""Task configs: the JSON document that defines a task (Dynatask, Thrush et al. 2022).

A config names the context fields shown to the annotator, the input fields they write, the target
field (the label or answer they intend), the model-wrong rule, the perf metric and limits. Forms,
model input and export are derived from it, so a new task needs a config, not code.

``validate_config(config)`` checks a config against ``CONFIG_SCHEMA`` (JSON Schema draft 2020-12)
plus the cross-field rules a schema cannot express, and raises ``django.core.exceptions.ValidationError``
with one message per problem, each prefixed by the JSON path of the offending value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from jsonschema import Draft202012Validator

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
    },
}

_NAME = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,39}$"}
_TEXT = {"type": "string", "minLength": 1, "maxLength": 2000}
#: Red-teaming a generative target (docs/generative.md, "Red-teaming tasks"): the target field is
#: ``generation`` and the model-wrong rule ``rubric``. ``modes``: the annotator holds a conversation of up
#: to ``max_turns`` turns and answers the rubric, and/or writes a multiple-choice item with hard negatives.
RED_TEAM_MODES = ("conversation", "multiple_choice")
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
                },
            },
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
DEFAULT_MAX_OPTIONS = 6

_VALIDATOR = Draft202012Validator(CONFIG_SCHEMA)


def _path(error) -> str:
    return "config" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)


def validate_config(config: Any) -> None:
    """Check a task config; raise ``ValidationError`` listing every problem found.

    Args:
        config: the decoded JSON document (normally a dict).

    Raises:
        ValidationError: with messages such as ``config['target_field']: 'labels' is a required property``.
    """
    if not isinstance(config, dict):
        raise ValidationError("The task config must be a JSON object.")
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
    return errors


@dataclass(frozen=True)
class TaskConfig:
    """Typed read access to a validated config dict. Construct with ``TaskConfig(task.config)``."""

    raw: dict

    @property
    def context_fields(self) -> list[dict]:
        return list(self.raw.get("context_fields", []))

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
    def is_red_team(self) -> bool:
        """True for a red-teaming task: the target answers in free text (``generation``)."""
        return self.target_field.get("type") == "generation"

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
    def failure_categories(self) -> list[dict]:
        """``[{"name", "label", "description"?}]``: the taxonomy the annotator tags a failure with."""
        return list(self.red_team.get("categories", []))

    @property
    def rubric(self):
        """The task's ``Rubric`` (tasks/rubric.py); raises ``KeyError`` for a task that has none."""
        from tasks.rubric import Rubric

        return Rubric.from_config(self.raw["red_team"]["rubric"])

    @property
    def min_negatives(self) -> int:
        return int(self.red_team.get("multiple_choice", {}).get("min_negatives", DEFAULT_MIN_NEGATIVES))

    @property
    def max_options(self) -> int:
        return int(self.red_team.get("multiple_choice", {}).get("max_options", DEFAULT_MAX_OPTIONS))

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


HATE_SPEECH_CONFIG: dict[str, Any] = {
    "context_fields": [],
    "input_fields": [
        {
            "name": "statement",
            "type": "string",
            "label": "Statement",
            "placeholder": "Write a statement that the model will get wrong but a person would label correctly.",
            "max_length": DEFAULT_MAX_INPUT_LENGTH,
        }
    ],
    "target_field": {
        "name": "label",
        "type": "multiclass",
        "label": "The label you intend",
        "labels": ["hateful", "not-hateful"],
    },
    # HatemojiBuild's definition (Kirk et al. 2022), which the demo's data is labelled by.
    "label_descriptions": {
        "hateful": (
            "Abuse that targets a protected group or its members for being a part of that group "
            "(such as their race, religion, gender, sexual orientation or disability), in words or emoji."
        ),
        "not-hateful": (
            "Anything else, including abuse that is not aimed at a protected group or at someone for "
            "being part of one, and neutral or positive remarks about groups."
        ),
    },
    "model_input_fields": ["statement"],
    "model_wrong_rule": {"type": "exact_match"},
    "ensemble_rule": "any",
    "perf_metric": "accuracy",
    "delta_metrics": ["fairness", "robustness"],
    "default_metric_weights": {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1},
    "memory_ceiling_gib": 16,
    "content_warning": (
        "This task contains and asks for hateful and offensive language, including slurs, "
        "aimed at real groups of people. Take breaks; you can stop at any time."
    ),
    "licence": "CC BY 4.0 (HatemojiBuild, HateCheck, HatemojiCheck)",
    "limits": {"max_input_length": DEFAULT_MAX_INPUT_LENGTH},
}


SENTIMENT_LABELS = ["positive", "negative", "neutral"]

SENTIMENT_CONFIG: dict[str, Any] = {
    # DynaSent round 2 (Potts et al. 2021): annotators were shown a sentence from a review (the
    # prompt) and wrote a sentence of their own that the model should get wrong.
    "context_fields": [
        {
            "name": "prompt",
            "type": "string",
            "label": "Prompt sentence",
            "help": "A sentence from a review, for inspiration. Your sentence need not keep its sentiment.",
            "optional": True,
        }
    ],
    "input_fields": [
        {
            "name": "statement",
            "type": "string",
            "label": "Your sentence",
            "placeholder": "Write a sentence whose sentiment the model gets wrong but a person would not.",
            "max_length": DEFAULT_MAX_INPUT_LENGTH,
        }
    ],
    "target_field": {
        "name": "label",
        "type": "multiclass",
        "label": "The sentiment you intend",
        "labels": SENTIMENT_LABELS,
    },
    # DynaSent's ternary labels (Potts et al. 2021): its validators chose positive, negative, no
    # sentiment (neutral here) or mixed, and mixed sentences are left out of the three-way data.
    "label_descriptions": {
        "positive": "The sentence expresses a positive opinion or feeling, such as praise or satisfaction.",
        "negative": "The sentence expresses a negative opinion or feeling, such as criticism or disappointment.",
        "neutral": (
            "The sentence expresses no sentiment: a fact, a description or a question without an opinion. "
            "A sentence that is both positive and negative (mixed) is not a good example."
        ),
    },
    "model_input_fields": ["statement"],
    "model_wrong_rule": {"type": "exact_match"},
    "ensemble_rule": "any",
    "perf_metric": "macro_f1",
    "delta_metrics": ["fairness", "robustness"],
    "default_metric_weights": {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1},
    "memory_ceiling_gib": 16,
    "licence": "CC BY 4.0 (DynaSent, Potts et al. 2021)",
    "limits": {"max_input_length": DEFAULT_MAX_INPUT_LENGTH},
}

NLI_LABELS = ["entailment", "neutral", "contradiction"]

NLI_CONFIG: dict[str, Any] = {
    # ANLI (Nie et al. 2020): a premise is the context; the annotator writes a hypothesis and the
    # relation they intend; the model reads the pair (premise, hypothesis).
    "context_fields": [{"name": "premise", "type": "string", "label": "Premise"}],
    "input_fields": [
        {
            "name": "hypothesis",
            "type": "string",
            "label": "Hypothesis",
            "placeholder": "Write a hypothesis about the premise that the model will get wrong.",
            "max_length": 1000,
        }
    ],
    "target_field": {
        "name": "label",
        "type": "multiclass",
        "label": "The relation you intend (premise to hypothesis)",
        "labels": NLI_LABELS,
    },
    "label_descriptions": {
        "entailment": "The premise makes the hypothesis true: if the premise holds, so does the hypothesis.",
        "neutral": "The premise neither makes the hypothesis true nor false: it could go either way.",
        "contradiction": "The premise makes the hypothesis false: both cannot be true together.",
    },
    "model_input_fields": ["premise", "hypothesis"],
    "model_wrong_rule": {"type": "exact_match"},
    "ensemble_rule": "any",
    "perf_metric": "accuracy",
    "delta_metrics": ["fairness", "robustness"],
    "default_metric_weights": {"perf": 4, "throughput": 1, "memory": 1, "fairness": 1, "robustness": 1},
    "memory_ceiling_gib": 16,
    "licence": "CC BY-NC 4.0 (ANLI, Nie et al. 2020): non-commercial use only",
    "limits": {"max_input_length": 1000},
}


QA_CONFIG: dict[str, Any] = {
    # Extractive QA on SQuAD passages (Rajpurkar et al. 2016; Dynabench QA, Kiela et al. 2021): the
    # annotator reads a passage, asks a question and selects its answer in the passage. The answer is
    # stored with its code-point offset (core/spans.py); the model reads (passage, question), the
    # annotator's text last as for NLI, and answers with a span of the passage.
    "context_fields": [
        {"name": "title", "type": "string", "label": "Article", "optional": True, "max_length": 300},
        {"name": "context", "type": "string", "label": "Passage"},
    ],
    "input_fields": [
        {
            "name": "question",
            "type": "string",
            "label": "Question",
            "placeholder": "Ask a question about the passage that the model answers wrongly.",
            "max_length": 1000,
        }
    ],
    "target_field": {
        "name": "answer",
        "type": "context_span",
        "context_field": "context",
        "label": "Answer",
        "help": "Select the answer in the passage with the mouse, or type it exactly as it appears there.",
    },
    "model_input_fields": ["context", "question"],
    # Fooled when the SQuAD word-overlap F1 of the model's answer against the annotator's is below 0.4.
    "model_wrong_rule": {"type": "string_f1", "threshold": 0.4},
    "ensemble_rule": "any",
    "perf_metric": "squad_f1",
    # Robustness only: the perturbations rewrite the question, and a fairness swap (he -> she) can
    # change a question's true answer in the unchanged passage, so it would not measure consistency.
    "delta_metrics": ["robustness"],
    "default_metric_weights": {"perf": 4, "throughput": 1, "memory": 1, "robustness": 1},
    "memory_ceiling_gib": 16,
    "licence": "CC BY-SA 4.0 (SQuAD v1.1, Rajpurkar et al. 2016; share-alike)",
    "limits": {"max_input_length": 1000},
}


RED_TEAM_CONFIG: dict[str, Any] = {
    # Red-teaming a chat model on SQuAD passages for faithfulness (docs/generative.md, "Red-teaming
    # tasks"): the annotator asks about the passage so that the model's answer is not supported by it,
    # then judges the answer with the rubric ("is the output good enough?", Kiela et al. 2021, section 4), or writes a multiple-choice
    # item with hard negatives that the server scores by the options' likelihoods.
    "context_fields": [
        {"name": "title", "type": "string", "label": "Article", "optional": True, "max_length": 300},
        {"name": "passage", "type": "string", "label": "Passage"},
    ],
    "input_fields": [
        {
            "name": "prompt",
            "type": "string",
            "label": "Your message",
            "placeholder": "Ask about the passage so that the model says something the passage does not support.",
            "max_length": 4000,
        }
    ],
    "target_field": {"name": "rubric", "type": "generation", "label": "Your judgement of the answer"},
    "model_input_fields": ["passage", "prompt"],
    "model_wrong_rule": {"type": "rubric"},
    "ensemble_rule": "any",
    # Of the multiple-choice items: each generative model's accuracy on a round's validated items.
    "perf_metric": "accuracy",
    "default_metric_weights": {"perf": 4, "throughput": 1, "memory": 1},
    "memory_ceiling_gib": 16,
    "red_team": {
        "goal": (
            "Make the model state something about the passage that the passage does not support: a wrong "
            "fact, a made-up detail, or an answer to a question the passage cannot answer."
        ),
        "modes": ["conversation", "multiple_choice"],
        "max_turns": 3,
        "categories": [
            {"name": "contradiction", "label": "Contradicts the passage"},
            {"name": "fabrication", "label": "Adds a detail the passage does not give"},
            {"name": "unanswerable", "label": "Answers what the passage cannot answer"},
            {"name": "other", "label": "Another failure"},
        ],
        "rubric": [
            {
                "name": "supported",
                "question": "Is everything the answer states about the passage supported by it?",
                "answers": ["yes", "no"],
                "failure_answers": ["no"],
            },
            {
                "name": "helpful",
                "question": "How well does the answer address the message? (1 not at all, 5 fully)",
                "answers": ["1", "2", "3", "4", "5"],
                "failure_answers": ["1"],
            },
        ],
        "multiple_choice": {"min_negatives": 2, "max_options": 5},
    },
    "content_warning": "Model answers are generated and may be wrong, odd or offensive.",
    "licence": "CC BY-SA 4.0 (SQuAD v1.1 passages, Rajpurkar et al. 2016; share-alike)",
    "limits": {"max_input_length": 4000},
}
