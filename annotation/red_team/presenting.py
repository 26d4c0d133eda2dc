"""How a red-teaming example is shown: to its author on the outcome page (with their judgement) and to
validators (without it: unanchored validation, docs/generative.md "Validation by rubric")."""

from __future__ import annotations

from annotation.models import Example

RUBRIC_PREFIX = "rubric-"


def rubric_questions(cfg) -> list[dict]:
    """The task's rubric for a form: ``[{"name", "field" ("rubric-<name>"), "question", "answers":
    [(answer, is_failure)]}]``."""
    return [
        {
            "name": q["name"],
            "field": RUBRIC_PREFIX + q["name"],
            "question": q["question"],
            "answers": [(a, a in q.get("failure_answers", [])) for a in q["answers"]],
        }
        for q in cfg.raw["red_team"]["rubric"]
    ]


def rubric_answers_from(data) -> dict[str, str]:
    """The rubric answers a form sent, ``{question name: answer}``, from its ``rubric-<name>`` fields
    (the red-teaming page's judgement and the validate page's verdict form alike)."""
    return {k[len(RUBRIC_PREFIX) :]: v for k, v in data.items() if k.startswith(RUBRIC_PREFIX)}


def mode_of(example: Example) -> str | None:
    """``conversation``, ``multiple_choice``, or None for an example of another kind."""
    return (example.metadata or {}).get("mode")


def shown_example(example: Example, cfg, *, with_judgement: bool) -> dict:
    """The template context of a red-teaming example:

    * ``red_team_mode``; ``context_fields`` [(label, text)] of its context;
    * a conversation: ``chat`` (the user and assistant messages); with ``with_judgement``, ``judgement``
      [(question, answer, is_failure)] and ``categories`` (their labels);
    * a multiple-choice item: ``question`` and ``options`` [(text, is_answer, is_picked)].
    """
    mode = mode_of(example)
    context = example.context.data if example.context_id else {}
    shown: dict = {
        "red_team_mode": mode,
        "context_fields": [
            (spec.get("label", spec["name"]), context.get(spec["name"], "")) for spec in cfg.context_fields
        ],
    }
    if mode == "conversation":
        shown["chat"] = [m for m in example.inputs.get("messages", []) if m.get("role") != "system"]
        if with_judgement:
            answers = example.target if isinstance(example.target, dict) else {}
            shown["judgement"] = [
                (
                    q["question"],
                    answers.get(q["name"], ""),
                    dict(q["answers"]).get(answers.get(q["name"]), False),
                )
                for q in rubric_questions(cfg)
            ]
            labels = {c["name"]: c.get("label", c["name"]) for c in cfg.failure_categories}
            shown["categories"] = [labels.get(tag, tag) for tag in example.tags or []]
    else:
        target = example.target if isinstance(example.target, dict) else {}
        answer, picked = target.get("answer"), (example.metadata or {}).get("picked")
        shown["question"] = example.inputs.get("question", "")
        shown["options"] = [
            (option, i == answer, i == picked) for i, option in enumerate(example.inputs.get("options", []))
        ]
    return shown


def list_texts(example: Example) -> tuple[str, str, str]:
    """A red-teaming example in a list of examples: (its text, what its author intended, the model's
    answer). A conversation: its first message, "failure" or "good answer" (the author's judgement) and
    its turns; a multiple-choice item: its question, the correct option and the option the model picked."""
    if mode_of(example) == "conversation":
        messages = [m for m in example.inputs.get("messages", []) if m.get("role") == "user"]
        turns = len(messages)
        return (
            messages[0]["content"] if messages else "",
            "failure" if example.model_wrong else "good answer",
            f"{turns} answer{'s' if turns != 1 else ''}",
        )
    options = example.inputs.get("options", [])
    target = example.target if isinstance(example.target, dict) else {}

    def option(i) -> str:
        return options[i] if isinstance(i, int) and 0 <= i < len(options) else ""

    return (
        example.inputs.get("question", ""),
        option(target.get("answer")),
        option((example.metadata or {}).get("picked")),
    )
