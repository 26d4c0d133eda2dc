"""The data migration annotation 0008: answers stored cut short under the old shape (finish reason ``stop``
with ``extra["cut_short"]``) get finish reason ``cut_short``, on turns and on judged conversations'
examples; every other record is left as it was, and going back restores the old shape."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from annotation.models import Conversation, Example, Turn
from models_registry.models import RegisteredModel
from tests.factories.red_team import make_passage, make_red_team_round

migration = importlib.import_module("annotation.migrations.0008_cut_short_finish_reason")

RECORD = {"text": "The Amazon", "model": "smollm2", "decoding": {}, "output_tokens": 3, "error": ""}
OLD_CUT = {**RECORD, "finish_reason": "stop", "extra": {"queued_ms": 2.5, "cut_short": True}}
NEW_CUT = {**RECORD, "finish_reason": "cut_short", "extra": {"queued_ms": 2.5}}
ENDED = {**RECORD, "finish_reason": "stop", "extra": {}}
TOO_LONG = {**RECORD, "finish_reason": "length", "extra": {"queued_ms": 1.0}}


@pytest.fixture
def stored(db, tmp_path, annotator):
    """Two turns (one cut short, one ended by the model) and an example holding both records, plus one
    multiple-choice example without generations, all in the old shape."""
    round_ = make_red_team_round(tmp_path)
    context = make_passage(round_)
    conversation = Conversation.objects.create(
        round=round_, context=context, annotator=annotator, model=RegisteredModel.objects.get()
    )
    cut = Turn.objects.create(conversation=conversation, index=0, prompt="Hi", answer="The Amazon",
                              status="answered", generation=OLD_CUT)  # fmt: skip
    ended = Turn.objects.create(conversation=conversation, index=1, prompt="And?", answer="The Amazon",
                                status="answered", generation=ENDED)  # fmt: skip
    judged = Example.objects.create(
        round=round_, context=context, annotator=annotator, inputs={"messages": []}, target={},
        metadata={"mode": "conversation", "turns": 3, "generations": [OLD_CUT, ENDED, TOO_LONG]},
    )  # fmt: skip
    item = Example.objects.create(
        round=round_, context=context, annotator=annotator, inputs={"question": "?"}, target={"answer": 0},
        metadata={"mode": "multiple_choice"},
    )  # fmt: skip
    return cut, ended, judged, item


def _records(cut, ended, judged, item):
    for row in (cut, ended, judged, item):
        row.refresh_from_db()
    return cut.generation, ended.generation, judged.metadata, item.metadata


def test_old_cut_short_records_get_their_own_finish_reason_and_back(stored):
    cut, ended, judged, item = stored
    migration.forwards(apps, None)
    assert _records(*stored) == (
        NEW_CUT,
        ENDED,  # the model ended this one: still stop
        {"mode": "conversation", "turns": 3, "generations": [NEW_CUT, ENDED, TOO_LONG]},
        {"mode": "multiple_choice"},
    )
    migration.forwards(apps, None)  # run twice (a re-applied migration): nothing changes
    assert _records(*stored)[0] == NEW_CUT
    migration.backwards(apps, None)
    assert _records(*stored) == (
        OLD_CUT,
        ENDED,
        {"mode": "conversation", "turns": 3, "generations": [OLD_CUT, ENDED, TOO_LONG]},
        {"mode": "multiple_choice"},
    )
