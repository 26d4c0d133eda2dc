"""Shorter passages for the flows that run the real SmolLM2 on the demo's red-teaming round."""

from __future__ import annotations


def first_sentence(passage: str) -> str:
    """The passage up to and with its first full stop followed by a space (all of it if there is none)."""
    head, stop, _ = passage.partition(". ")
    return head + "." if stop else passage


def cut_to_first_sentences(contexts) -> None:
    """Cut each ``Context``'s ``passage`` to its first sentence and save them (one ``bulk_update``).

    Why: every prompt of a red-teaming flow holds its passage (the answers, replays, the judge's), so the
    passage's length sets the cost of each forward pass, and the flow, not that length, is under test:
    the benchmarking flow took 72 s with whole passages and 59 s with first sentences, the pilot's 45 s
    and 37 s (run alone, docs/testing.md)."""
    from tasks.models import Context

    contexts = list(contexts)
    for context in contexts:
        context.data = {**context.data, "passage": first_sentence(context.data["passage"])}
    Context.objects.bulk_update(contexts, ["data"])
