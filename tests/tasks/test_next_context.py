"""Context serving: least_used never starves a context, uniform, least_fooled, tag filter, one query."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Example
from tasks.models import Context
from tasks.selectors import context_of_round, next_context


def _contexts(round_, n, tag=""):
    return Context.objects.bulk_create(
        [Context(task=round_.task, round=round_, data={"prompt": f"p{i}"}, tag=tag) for i in range(n)]
    )


def _submit(context, *, wrong=False, retracted=False):
    """What an annotator's submission leaves behind: an example written on the context."""
    return Example.objects.create(
        round=context.round,
        context=context,
        inputs={"statement": "s"},
        target="hateful",
        model_wrong=wrong,
        is_retracted=retracted,
    )


@pytest.mark.parametrize("rng", [None, random.Random(7)], ids=["database-random", "seeded"])
def test_1000_requests_over_100_contexts_use_every_context(prompt_task, rng):
    round_ = prompt_task.current_round
    contexts = _contexts(round_, 100)
    served = Counter()
    for _ in range(1000):
        context = next_context(round_=round_, strategy="least_used", rng=rng)
        served[context.pk] += 1
        _submit(context)
    assert set(served) == {c.pk for c in contexts}
    assert set(served.values()) == {10}  # every context served before any is served again


def test_least_used_breaks_ties_at_random(prompt_task):
    round_ = prompt_task.current_round
    _contexts(round_, 5)
    first = {next_context(round_=round_).pk for _ in range(60)}  # nothing submitted: all tied
    assert len(first) > 1


def test_least_used_ignores_retracted_examples(prompt_task):
    round_ = prompt_task.current_round
    a, b = _contexts(round_, 2)
    _submit(a, retracted=True)
    _submit(b)
    assert next_context(round_=round_) == a


def test_least_fooled_serves_the_context_that_fooled_least(prompt_task):
    round_ = prompt_task.current_round
    a, b, c = _contexts(round_, 3)
    for _ in range(3):
        _submit(a, wrong=True)
    _submit(b, wrong=True)
    for _ in range(5):
        _submit(c, wrong=False)  # used a lot, but never fooled the model
    _submit(c, wrong=True, retracted=True)  # retracted: does not count
    assert next_context(round_=round_, strategy="least_fooled") == c
    assert next_context(round_=round_, strategy="least_fooled", rng=random.Random(1)) == c
    _submit(c, wrong=True)
    _submit(c, wrong=True)
    # a: 3 fooled, b: 1, c: 2 -> b
    assert next_context(round_=round_, strategy="least_fooled") == b


def test_least_fooled_prefers_less_used_among_equally_fooled(prompt_task):
    round_ = prompt_task.current_round
    a, b = _contexts(round_, 2)
    _submit(a)
    _submit(a)
    _submit(b)
    assert {next_context(round_=round_, strategy="least_fooled") for _ in range(10)} == {b}


def test_uniform_serves_all_contexts_of_the_round(prompt_task, hate_round):
    round_ = prompt_task.current_round
    mine = _contexts(round_, 10)
    _contexts(hate_round, 5)  # another task's round: never served here
    rng = random.Random(3)
    served = {next_context(round_=round_, strategy="uniform", rng=rng).pk for _ in range(200)}
    assert served == {c.pk for c in mine}
    assert next_context(round_=round_, strategy="uniform").round == round_


def test_tag_filter(prompt_task):
    round_ = prompt_task.current_round
    _contexts(round_, 20, tag="news")
    sport = _contexts(round_, 3, tag="sport")
    for strategy in ("least_used", "uniform", "least_fooled"):
        for rng in (None, random.Random(5)):
            picked = next_context(round_=round_, strategy=strategy, tag="sport", rng=rng)
            assert picked in sport
    assert next_context(round_=round_, tag="cooking") is None


def test_no_contexts_and_unknown_strategy(prompt_task):
    round_ = prompt_task.current_round
    assert next_context(round_=round_) is None
    assert next_context(round_=round_, rng=random.Random(0)) is None
    assert next_context(round_=round_, strategy="uniform", rng=random.Random(0)) is None
    with pytest.raises(ValueError, match="unknown context strategy"):
        next_context(round_=round_, strategy="most_used")


def test_one_query_per_request_on_thousands_of_contexts(prompt_task):
    round_ = prompt_task.current_round
    contexts = _contexts(round_, 3000)
    for c in contexts[:2999]:
        _submit(c)
    with CaptureQueriesContext(connection) as queries:
        picked = next_context(round_=round_)
    assert len(queries) == 1
    assert picked == contexts[2999]  # the only unused one, found among 3,000


def test_context_of_round(prompt_task, hate_round):
    round_ = prompt_task.current_round
    [mine] = _contexts(round_, 1)
    [theirs] = _contexts(hate_round, 1)
    assert context_of_round(round_, str(mine.pk)) == mine
    assert context_of_round(round_, theirs.pk) is None
    assert context_of_round(round_, "x") is None and context_of_round(round_, None) is None
