"""A red-teaming round with settled prompts to replay (tests/generative_bench/test_replay*.py): stored as
``annotation.red_team`` stores them (``submit_conversation`` and ``write_choice_item``), written directly
so a test chooses each one's state without running the target."""

from __future__ import annotations

from annotation.models import Example
from engine.runtime.generative import ChoiceScores, Generation
from generative_bench.replay import jobs
from models_registry.models import RegisteredModel
from tests.factories.accounts import UserFactory
from tests.factories.red_team import make_passage, make_red_team_round

#: The stored turns (human message, the target's answer) of the world's conversations.
ONE_TURN = [("How long is the Amazon? 🌊", "It is about 6,400 km long.")]
TWO_TURNS = [
    ("Where does the Amazon flow?", "Through Brazil."),
    ("And how long is it?", "About 100 km."),
]
RTL_TURN = [("ما طول نهر الأمازون؟", "حوالي 6400 كم.")]


def conversation(round_, context, turns, *, status="validated_correct", author=None, **fields) -> Example:
    """A conversation example as ``submit_conversation`` stores it: ``turns`` as user and assistant
    messages, the author's rubric answers as its target (a failure), settled ``status``."""
    messages = []
    for prompt, answer in turns:
        messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    return Example.objects.create(
        round=round_,
        context=context,
        annotator=author or UserFactory(),
        inputs={"messages": messages},
        target={"supported": "no", "helpful": "2"},
        model_wrong=True,
        tags=["fabrication"],
        status=status,
        metadata={"mode": "conversation", "turns": len(turns), "generations": [], "cost": None},
        **fields,
    )


def choice_item(
    round_, context, question, options, answer, *, status="validated_correct", **fields
) -> Example:
    """A multiple-choice item as ``write_choice_item`` stores it (options in the order shown)."""
    return Example.objects.create(
        round=round_,
        context=context,
        annotator=UserFactory(),
        inputs={"question": question, "options": options},
        target={"answer": answer},
        model_wrong=False,
        status=status,
        metadata={"mode": "multiple_choice", "picked": answer},
        **fields,
    )


def replay_world(smollm2_dir, *, generation: dict | None = None) -> dict:
    """A red-teaming round (SmolLM2 its target, greedy, 12 new tokens unless ``generation``) with:

    * ``one``, ``two``, ``rtl``: settled conversations (one turn with an emoji, two turns, right-to-left),
      ``rtl`` settled ``validated_incorrect``;
    * ``item``: a validated multiple-choice item (the answer is option 1);
    * ``pending``, ``retracted``, ``flagged``, ``pending_item``: what a replay leaves out;
    * ``second``: a second ready local model of the task (SmolLM2 again, another name), to replay.
    """
    round_ = make_red_team_round(smollm2_dir, generation=generation)
    passage = make_passage(round_)
    world = {
        "round": round_,
        "task": round_.task,
        "passage": passage,
        "target": round_.targets.get().model,
        "one": conversation(round_, passage, ONE_TURN),
        "two": conversation(round_, passage, TWO_TURNS),
        "rtl": conversation(round_, passage, RTL_TURN, status="validated_incorrect"),
        "item": choice_item(
            round_, passage, "How long is the Amazon?", ["About 100 km", "About 6,400 km", "About 9 km"], 1
        ),
        "pending": conversation(round_, passage, ONE_TURN, status="pending"),
        "retracted": conversation(round_, passage, ONE_TURN, is_retracted=True),
        "flagged": conversation(round_, passage, ONE_TURN, status="flagged"),
        "pending_item": choice_item(
            round_, passage, "Where?", ["Brazil", "Peru", "Chile"], 0, status="pending"
        ),
    }
    world["second"] = RegisteredModel.objects.create(
        task=round_.task,
        name="second",
        path=str(smollm2_dir),
        status="ready",
        generation=generation or {"max_new_tokens": 12, "temperature": 0.0},
    )
    return world


class StandIn:
    """``generate_batch`` and ``choose`` without a model: answers ``"answer to <last message>"``, counts
    the conversations it was sent, crashes on a message holding ``crash_on``, and runs ``after_call``."""

    def __init__(self, crash_on: str | None = None, after_call=None):
        self.sent: list[str] = []
        self.chosen = 0
        self.crash_on, self.after_call = crash_on, after_call

    def generate_batch(self, model, conversations, decoding=None, *, batch_size=8):
        out = []
        for messages in conversations:
            last = messages[-1]["content"]
            if self.crash_on is not None and self.crash_on in last:
                raise RuntimeError("boom")
            self.sent.append(last)
            out.append(
                Generation(
                    text=f"answer to {last}",
                    finish_reason="stop",
                    model=model.name,
                    decoding={},
                    input_tokens=5,
                    output_tokens=4,
                    first_token_ms=100.0,
                    latency_ms=500.0,
                    cost=0.001,
                )
            )
        if self.after_call:
            self.after_call()
        return out

    def choose(self, model, messages, options):
        self.chosen += 1
        return ChoiceScores((-1.0, -0.5, -2.0), (-0.1, -0.05, -0.2), picked=1, picked_unnormalised=1)


def install_stand_in(monkeypatch, **kwargs) -> StandIn:
    """A ``StandIn`` in place of the replay job's model calls, the job's batches of one conversation."""
    fake = StandIn(**kwargs)
    monkeypatch.setattr(jobs, "generate_batch", fake.generate_batch)
    monkeypatch.setattr(jobs, "choose", fake.choose)
    monkeypatch.setattr(jobs, "BATCH_SIZE", 1)
    return fake
