"""The prompt a judge model is sent, and reading its answer back (docs/benchmarking.md, "Judges").

A judge's ``prompt_template`` is text with four placeholders, filled in for each output judged:

* ``{context}``: the passage (each context field on its own paragraph, "Passage: ..."), or "(none)";
* ``{conversation}``: the turns before the output, ending with the user message it answers
  ("User: ...", "Assistant: ..." paragraphs);
* ``{output}``: the answer judged;
* ``{rubric}``: each question of the task's rubric with its name and the answers it allows.

``{output}`` and ``{rubric}`` are required. A literal brace is written twice (``{{`` and ``}}``), as in
Python's ``str.format``; any other placeholder, a lone brace, or a format spec is refused by
``check_template`` with each problem named. Values are inserted as they are: a brace in an answer is
text, never a placeholder.

``parse`` reads the judge's reply: the first JSON object in it, else ``name: answer`` lines; question
names and answers are matched case-insensitively to the rubric's, then checked by ``Rubric.clean``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from core.text_rules import lone_surrogate_path, normalise_newlines
from tasks.rubric import Rubric

PLACEHOLDERS = ("context", "conversation", "output", "rubric")
REQUIRED = ("output", "rubric")
#: The longest template an owner may store, in characters.
MAX_TEMPLATE_LENGTH = 20_000
#: Of a judge's reply, only this many characters are searched for answers (a model that rambles on is
#: read from its start; its whole text is stored in ``JudgeVerdict.raw`` anyway).
MAX_PARSED_LENGTH = 20_000

DEFAULT_TEMPLATE = """You judge the answer of an AI assistant with a rubric. Read the passage, the conversation and the answer, then answer every question of the rubric.

Passage:
{context}

Conversation before the answer:
{conversation}

The answer to judge:
<<<
{output}
>>>

The rubric (each question's name, the question, and the answers allowed):
{rubric}

Reply with one JSON object and nothing else: each question's name as a key and one of its allowed answers as the value, for example {{"name": "answer"}}."""


class TemplateError(ValueError):
    """A prompt template that cannot be used; ``problems`` lists each one, said to a person."""

    def __init__(self, problems: list[str]):
        super().__init__(" ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class _Placeholder:
    name: str


def _segments(template: str) -> list[str | _Placeholder]:
    """``template`` as literal text and placeholders, in order.

    Raises:
        TemplateError: every lone brace, unknown placeholder or format spec, each with its position.
    """
    segments, problems = _scan(template)
    if problems:
        raise TemplateError(problems)
    return segments


def _scan(template: str) -> tuple[list[str | _Placeholder], list[str]]:
    """``template`` as literal text and placeholders, and its problems (``_segments``)."""
    segments: list[str | _Placeholder] = []
    problems: list[str] = []
    literal: list[str] = []
    i, n = 0, len(template)
    while i < n:
        char = template[i]
        if char in "{}" and template[i : i + 2] == char * 2:
            literal.append(char)
            i += 2
            continue
        if char == "}":
            problems.append(f"A lone '}}' at character {i + 1}: write '}}}}' for a literal brace.")
            i += 1
            continue
        if char != "{":
            literal.append(char)
            i += 1
            continue
        end = template.find("}", i + 1)
        inner_open = template.find("{", i + 1)
        if end == -1 or (inner_open != -1 and inner_open < end):
            problems.append(
                f"A lone '{{' at character {i + 1}: write '{{{{' for a literal brace, or close the "
                "placeholder."
            )
            i += 1
            continue
        name = template[i + 1 : end]
        if name not in PLACEHOLDERS:
            shown = name if len(name) <= 40 else name[:40] + "…"
            allowed = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            problems.append(
                f"Unknown placeholder {{{shown}}} at character {i + 1}: use {allowed} "
                "(write '{{' and '}}' for literal braces)."
            )
        else:
            if literal:
                segments.append("".join(literal))
                literal = []
            segments.append(_Placeholder(name))
        i = end + 1
    if literal:
        segments.append("".join(literal))
    return segments, problems


def check_template(template) -> str:
    """The owner's template, checked and with newlines normalised (CRLF to LF).

    Raises:
        TemplateError: not text, empty, longer than ``MAX_TEMPLATE_LENGTH``, a lone surrogate, a lone
            brace, an unknown placeholder (``{passage}``, ``{0}``, ``{output!r}``), or ``{output}`` or
            ``{rubric}`` missing; each problem named.
    """
    if not isinstance(template, str) or not template.strip():
        raise TemplateError(["Write a prompt template."])
    if lone_surrogate_path(template) is not None:
        raise TemplateError(["The template holds a lone surrogate, which is not text."])
    template = normalise_newlines(template)
    if len(template) > MAX_TEMPLATE_LENGTH:
        raise TemplateError(
            [f"The template is {len(template):,} characters; at most {MAX_TEMPLATE_LENGTH:,}."]
        )
    segments, problems = _scan(template)
    used = {s.name for s in segments if isinstance(s, _Placeholder)}
    problems += [
        f"The template must contain {{{p}}}, where the {_WHAT[p]} goes." for p in REQUIRED if p not in used
    ]
    if problems:
        raise TemplateError(problems)
    return template


_WHAT = {"output": "answer judged", "rubric": "rubric's questions"}


def rubric_text(rubric: Rubric) -> str:
    """What ``{rubric}`` becomes: one line per question, ``- "name": question Allowed answers: "a",
    "b".`` (the names quoted as the JSON keys the judge must write)."""
    lines = []
    for q in rubric.questions:
        allowed = ", ".join(json.dumps(a, ensure_ascii=False) for a in q.answers)
        lines.append(f"- {json.dumps(q.name, ensure_ascii=False)}: {q.question} Allowed answers: {allowed}.")
    return "\n".join(lines)


def conversation_text(messages: list[dict]) -> str:
    """What ``{conversation}`` becomes: each user and assistant message as a paragraph, ``User: ...`` or
    ``Assistant: ...`` (system messages left out: the passage is ``{context}``); "(none)" when empty."""
    names = {"user": "User", "assistant": "Assistant"}
    parts = [f"{names[m['role']]}: {m.get('content', '')}" for m in messages if m.get("role") in names]
    return "\n\n".join(parts) if parts else "(none)"


def render(template: str, *, context: str, conversation: list[dict], output: str, rubric: Rubric) -> str:
    """The prompt for one output: ``template`` with its placeholders filled (this module's docstring).

    ``context``: the passage as text ("" when none: "(none)" is shown); ``conversation``: the chat
    messages before the output, ending with the user message it answers; ``output``: the answer judged.

    Raises:
        TemplateError: a template ``check_template`` refuses (a stored one was checked when saved).
    """
    values = {
        "context": context.strip() or "(none)",
        "conversation": conversation_text(conversation),
        "output": output,
        "rubric": rubric_text(rubric),
    }
    return "".join(
        values[s.name] if isinstance(s, _Placeholder) else s for s in _segments(normalise_newlines(template))
    )


# --- reading the judge's reply --------------------------------------------------------------------------

#: Around an answer: spaces, quotes, markdown emphasis and a full stop or comma ("**Yes**.", "'no',").
_STRIP = " \t\"'`*_.,;"
#: A ``name: answer`` (or ``name = answer``) line, with an optional list bullet or number. Written so
#: that a long line that does not match fails in linear time: no two adjacent quantifiers can trade
#: the same spaces, and the name is at most 200 characters.
_LINE = re.compile(r"\s*(?:(?:[-*•]|\d+[.)])\s*)?(?P<name>[^\s:=][^:=\n]{0,199}?)\s*[:=](?P<answer>.+)")
#: How many ``{`` of a reply are tried as the start of a JSON object.
MAX_JSON_TRIES = 50
#: Longer lines are not read as ``name: answer`` (an answer is a word or a number, not a page).
MAX_LINE = 1000


def _first_json_object(text: str) -> dict | None:
    """The first ``{...}`` of ``text`` that decodes as a JSON object (code fences and prose around it are
    skipped), or None."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    # A bounded number of tries: each can read far before failing ('{"a": [[[[...'), so a reply full of
    # braces would otherwise take quadratic time.
    for _ in range(MAX_JSON_TRIES):
        if start == -1:
            break
        try:
            value, _ = decoder.raw_decode(text, start)
        except RecursionError:
            # Nested deeper than Python recurses: every later "{" of that nest is as deep, and each try
            # would read a thousand levels before failing again, so the JSON search ends here.
            return None
        except ValueError:  # not JSON there
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def _as_text(value) -> str | None:
    """A JSON value as an answer's text: strings stripped, integral numbers as digits ("5" for 5 or
    5.0), true/false as "yes"/"no"; None for anything else (lists, objects, null)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def _match_answer(raw: str, offered: tuple[str, ...]) -> str | None:
    """The offered answer ``raw`` stands for: equal ignoring case and ``_STRIP`` characters around it, or
    else the offered answer it starts with as a whole word ("no, it adds a detail" -> "no", "5 (fully)"
    -> "5"; "10" is not "1"); None when it names none."""
    cleaned = raw.strip().strip(_STRIP).casefold()
    by_fold = {a.casefold(): a for a in offered}
    if cleaned in by_fold:
        return by_fold[cleaned]
    for folded in sorted(by_fold, key=len, reverse=True):  # the longest first: "not at all" before "not"
        if cleaned.startswith(folded) and not cleaned[len(folded) : len(folded) + 1].isalnum():
            return by_fold[folded]
    return None


def _answers_from(pairs, rubric: Rubric) -> dict[str, str]:
    """``{question name: offered answer}`` from ``(name, raw answer)`` pairs: names matched to the
    rubric's ignoring case, spaces and quotes, the first pair of each question kept, unknown names and
    answers no question offers left out (``Rubric.clean`` then says what is missing)."""
    questions = {q.name.casefold(): q for q in rubric.questions}
    answers: dict[str, str] = {}
    for name, raw in pairs:
        if not isinstance(name, str):
            continue
        question = questions.get(name.strip().strip(_STRIP).casefold())
        text = _as_text(raw)
        if question is None or question.name in answers or text is None:
            continue
        answer = _match_answer(text, question.answers)
        if answer is not None:
            answers[question.name] = answer
    return answers


def parse(text: str, rubric: Rubric) -> dict[str, str] | None:
    """The rubric answers in a judge's reply, ``{question name: answer}`` as ``Rubric.clean`` returns
    them, or None when the reply does not answer every question with an answer it allows.

    Each question's answer is taken from the first JSON object in the text (inside a code fence or
    prose; keys and answers matched ignoring case; extra keys such as an explanation ignored), else
    from the first ``name: answer`` line that gives it ("Supported: No", "- helpful = 4"). ``text`` is
    searched in its first ``MAX_PARSED_LENGTH`` characters.
    """
    if not isinstance(text, str):
        return None
    text = normalise_newlines(text[:MAX_PARSED_LENGTH])
    found = _first_json_object(text)
    lines = (_LINE.match(line) for line in text.split("\n") if len(line) <= MAX_LINE)
    pairs = [*(found.items() if found else ()), *((m["name"], m["answer"]) for m in lines if m)]
    try:
        return rubric.clean(_answers_from(pairs, rubric))
    except ValidationError:
        return None
