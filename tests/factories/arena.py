"""The arena's test data: a red-teaming task with two (or more) generative models, settled conversations
to take prompts from, and battles stored with their answers (to vote on without generating)."""

from __future__ import annotations

from annotation.models import Example
from generative_bench.models import Battle
from models_registry.models import RegisteredModel
from tests.factories.red_team import make_passage, make_red_team_round

#: Names no page holds by chance, so a test can tell whether a page names the model.
NAME_A = "quokka-chat-7"
NAME_B = "wombat-chat-9"
#: The second model's own system prompt: the same weights answer differently.
PIRATE = "You are a pirate. Answer every question like a pirate would, with arr."


def make_arena(smollm2_dir, *, slug: str = "red-team", published: bool = True, max_new_tokens: int = 8):
    """A red-teaming task ``slug`` (round 1 current and open) with two ready local chat models of the real
    SmolLM2, greedy: ``NAME_A`` (the round's target, no system prompt) and ``NAME_B`` (``PIRATE`` as its
    system prompt). Returns ``(task, model_a, model_b)``."""
    round_ = make_red_team_round(
        smollm2_dir, slug=slug, generation={"max_new_tokens": max_new_tokens, "temperature": 0.0}
    )
    first = RegisteredModel.objects.get(task=round_.task)
    first.name, first.is_published = NAME_A, published
    first.save(update_fields=["name", "is_published"])
    second = RegisteredModel.objects.create(
        task=round_.task,
        name=NAME_B,
        path=str(smollm2_dir),
        status="ready",
        is_published=published,
        generation={"max_new_tokens": max_new_tokens, "temperature": 0.0, "system_prompt": PIRATE},
    )
    return round_.task, first, second


def add_model(task, name: str, *, path: str = "/nonexistent", **fields) -> RegisteredModel:
    """A ready, published local chat model ``name`` of ``task`` (its folder unused by tests that vote on
    stored battles)."""
    return RegisteredModel.objects.create(
        task=task, name=name, path=path, status="ready", is_published=True, **fields
    )


def settled_conversation(
    round_, annotator, *, first: str = "How long is the Amazon? 🌊", passage=None, **fields
):
    """A conversation example of ``round_`` settled validated-correct, on a passage (``make_passage``'s
    unless given): two turns, the first user message ``first``."""
    context = passage or make_passage(round_)
    return Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={
            "messages": [
                {"role": "user", "content": first},
                {"role": "assistant", "content": "About 6,400 km."},
                {"role": "user", "content": "And in miles?"},
                {"role": "assistant", "content": "About 4,000 miles."},
            ]
        },
        target={"supported": "yes", "helpful": "5"},
        model_wrong=False,
        status=fields.pop("status", Example.Status.VALIDATED_CORRECT),
        metadata={"mode": "conversation", "turns": 2},
        **fields,
    )


def stored_battle(task, voter, model_a, model_b, *, answer_a="Answer one.", answer_b="Answer two.") -> Battle:
    """A ready battle of ``voter`` with its answers already stored (nothing generated)."""
    return Battle.objects.create(
        task=task,
        round=task.current_round,
        voter=voter,
        messages=[{"role": "user", "content": "Which is better?"}],
        model_a=model_a,
        model_b=model_b,
        answer_a=answer_a,
        answer_b=answer_b,
        status=Battle.Status.READY,
    )


def remote_pair_task(tmp_path, *, names=("alpha", "bravo")):
    """A red-teaming task ``red-team`` (round 1 open; its round target not ready, so it stays out of the
    arena) with two ready, published chat-endpoint models ``names`` on a loopback address nothing
    listens on: tests replace the chat call (``services.chat_stream``)."""
    round_ = make_red_team_round(tmp_path, slug="red-team")
    RegisteredModel.objects.filter(task=round_.task).update(status="failed")
    for name in names:
        RegisteredModel.objects.create(
            task=round_.task,
            name=name,
            source=RegisteredModel.Source.CHAT_ENDPOINT,
            endpoint_url="http://127.0.0.1:9/v1",
            chat_model_name=name,
            status="ready",
            is_published=True,
        )
    return round_.task
