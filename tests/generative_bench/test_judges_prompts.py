"""The judge's prompt (``generative_bench.judges.prompts``): the default template over the task's rubric,
an owner's template checked with each problem named, and the judge's reply read tolerantly."""

from __future__ import annotations

import json

import pytest

from generative_bench.judges import prompts
from generative_bench.judges.prompts import TemplateError, check_template, parse, render
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.rubric import Rubric

RUBRIC = Rubric.from_config(RED_TEAM_CONFIG["red_team"]["rubric"])
CONVERSATION = [
    {"role": "user", "content": "How long is the Amazon?"},
    {"role": "assistant", "content": "About 6,400 km."},
    {"role": "user", "content": "And its width?"},
]


def test_the_default_template_fills_each_placeholder():
    prompt = render(
        prompts.DEFAULT_TEMPLATE,
        context="Passage: The Amazon is long.",
        conversation=CONVERSATION,
        output="It is 11 km wide {at most}.",
        rubric=RUBRIC,
    )
    assert "Passage:\nPassage: The Amazon is long.\n\n" in prompt
    assert (
        "Conversation before the answer:\nUser: How long is the Amazon?\n\nAssistant: About 6,400 km.\n\n"
        "User: And its width?\n\n"
    ) in prompt
    # A brace in the output is text, never a placeholder.
    assert "The answer to judge:\n<<<\nIt is 11 km wide {at most}.\n>>>" in prompt
    assert (
        '- "supported": Is everything the answer states about the passage supported by it? Allowed answers: '
        '"yes", "no".\n'
        '- "helpful": How well does the answer address the message? (1 not at all, 5 fully) Allowed '
        'answers: "1", "2", "3", "4", "5".'
    ) in prompt
    # The template's doubled braces become one: the JSON the judge is asked for.
    assert prompt.endswith('for example {"name": "answer"}.')
    assert "{context}" not in prompt and "{{" not in prompt


def test_no_passage_and_no_earlier_turn_say_none():
    prompt = render(
        "{context}|{conversation}|{output}|{rubric}", context="", conversation=[], output="x", rubric=RUBRIC
    )
    assert prompt.startswith("(none)|(none)|x|- ")


def test_emoji_rtl_and_crlf_are_kept_as_written():
    output = "נהר האמזונס 🌊 ארוך\r\nמאוד"
    prompt = render(prompts.DEFAULT_TEMPLATE, context="", conversation=[], output=output, rubric=RUBRIC)
    assert output in prompt


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{output} {rubric} {passage}", "Unknown placeholder {passage} at character 19"),
        ("{output} {rubric} {0}", "Unknown placeholder {0} at character 19"),
        ("{output!r} {rubric}", "Unknown placeholder {output!r} at character 1"),
        ("{output} {rubric} {}", "Unknown placeholder {} at character 19"),
        ('{output} {rubric} reply {"a": 1}', 'Unknown placeholder {"a": 1} at character 25'),
        ("{output} {rubric} a { b", "A lone '{' at character 21"),
        ("{output} {rubric} a } b", "A lone '}' at character 21"),
        ("{rubric} and nothing else", "The template must contain {output}, where the answer judged goes."),
        ("{output}", "The template must contain {rubric}, where the rubric's questions goes."),
        ("   ", "Write a prompt template."),
        ("{output} {rubric} \ud800", "The template holds a lone surrogate, which is not text."),
        ("{output}{rubric}" + "x" * 20_000, "The template is 20,016 characters; at most 20,000."),
    ],
)
def test_a_bad_template_is_refused_with_the_problem_named(template, problem):
    with pytest.raises(TemplateError) as refused:
        check_template(template)
    assert any(p.startswith(problem) for p in refused.value.problems), refused.value.problems


def test_every_problem_of_a_template_is_named_at_once():
    with pytest.raises(TemplateError) as refused:
        check_template("{output} {rubric} {passage} } {x")
    assert len(refused.value.problems) == 3


def test_a_good_template_is_kept_with_newlines_normalised():
    template = 'Judge this:\r\n{output}\r\n{rubric}\r\nReply as {{"supported": "yes"}}.'
    assert check_template(template) == 'Judge this:\n{output}\n{rubric}\nReply as {{"supported": "yes"}}.'
    assert render(template, context="", conversation=[], output="A", rubric=RUBRIC).endswith(
        'Reply as {"supported": "yes"}.'
    )
    assert check_template(prompts.DEFAULT_TEMPLATE) == prompts.DEFAULT_TEMPLATE


EXPECTED = {"supported": "no", "helpful": "2"}


@pytest.mark.parametrize(
    "reply",
    [
        '{"supported": "no", "helpful": "2"}',
        '```json\n{\n  "supported": "no",\n  "helpful": "2"\n}\n```',
        'Sure! Here is my judgement: {"supported": "no", "helpful": "2"} I hope this helps.',
        '{"Supported": "No", "HELPFUL": 2}',
        '{"supported": "NO.", "helpful": 2.0, "explanation": "It adds a {detail}."}',
        'The passage says {nothing} about it. {"supported": "no", "helpful": "2"}',
        "Supported: No\nHelpful: 2",
        "- **supported**: no, the passage does not say it\n- helpful = 2 (barely)",
        '1. "supported": "no"\n2. "helpful": "2"',
        '🙂 {"supported": "no", "helpful": "2"} 👍 נכון',
        '{"supported": "no"}\nhelpful: 2',
        "Supported: no\r\nHelpful: 2\r\n",
    ],
)
def test_the_answers_are_read_from_awkward_replies(reply):
    assert parse(reply, RUBRIC) == EXPECTED


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I cannot judge this answer.",
        '{"supported": "no"}',  # a question missing
        '{"supported": "maybe", "helpful": "2"}',  # an answer the question does not offer
        '{"supported": "no", "helpful": "10"}',  # "10" is not "1"
        '{"supported": "no", "helpful": "2"',  # never closed, and no "name: answer" line
        "[1, 2]",
        "helpful: 2",
        None,
    ],
)
def test_a_reply_that_does_not_answer_every_question_is_unreadable(reply):
    assert parse(reply, RUBRIC) is None


def test_the_first_json_object_wins_over_later_ones():
    reply = '{"supported": "yes", "helpful": "5"} or maybe {"supported": "no", "helpful": "1"}'
    assert parse(reply, RUBRIC) == {"supported": "yes", "helpful": "5"}


def test_a_very_long_reply_is_read_from_its_start():
    reply = '{"supported": "yes", "helpful": "4"}' + " blah" * 10_000
    assert parse(reply, RUBRIC) == {"supported": "yes", "helpful": "4"}
    assert parse(" " * prompts.MAX_PARSED_LENGTH + '{"supported": "yes", "helpful": "4"}', RUBRIC) is None


@pytest.mark.parametrize(
    ("reply", "json_tries"),
    [
        (" " * 20_000, 0),  # spaces a careless pattern would split every way between its quantifiers
        ('{"a": [' * 3000, 1),  # nested deeper than Python recurses: the first try ends the search
        ("{" * 20_000, prompts.MAX_JSON_TRIES),
        ("a: " + "x " * 10_000, 0),
        (("s" * 150 + ": " + " " * 700 + "\n") * 25, 0),
    ],
)
def test_a_pathological_reply_is_read_with_bounded_work(monkeypatch, reply, json_tries):
    """The work is counted, not timed (times belong in benchmarks/): the JSON decoder is tried a bounded
    number of times, and the line pattern only sees lines of at most MAX_LINE characters, which bounds
    its backtracking (its name part is at most 200 characters and it is anchored at the line's start)."""
    tries, lines = [], []
    raw_decode = json.JSONDecoder.raw_decode
    monkeypatch.setattr(
        json.JSONDecoder, "raw_decode", lambda self, s, idx=0: tries.append(idx) or raw_decode(self, s, idx)
    )
    line_pattern = prompts._LINE

    class Spy:
        def match(self, line):
            lines.append(len(line))
            return line_pattern.match(line)

    monkeypatch.setattr(prompts, "_LINE", Spy())
    assert parse(reply, RUBRIC) is None
    assert len(tries) == json_tries
    assert all(length <= prompts.MAX_LINE for length in lines)
    assert sum(lines) <= prompts.MAX_PARSED_LENGTH
