"""The NLI round the create-page browser tests write on (issue 29: the form carries its premise).

``nli_with_two_premises`` opens round 1 of the built-in NLI task with a weightless stand-in target whose
``predict`` (monkeypatched, so the live server's thread uses it too) says neutral at 0.8 whatever it
reads, and two premises: an example labelled entailment always fools it.
"""

from __future__ import annotations

PREMISES = ("It rained all day in Leeds.", "The shop on the corner sells bread.")
HYPOTHESIS = "The streets of Leeds were wet."


def always_neutral(model, inputs: list[dict]) -> list[dict]:
    """An NLI stand-in's ``predict``: neutral at 0.8 for every input."""
    output = {"label": "neutral", "probabilities": {"entailment": 0.1, "neutral": 0.8, "contradiction": 0.1}}
    return [dict(output) for _ in inputs]


def nli_with_two_premises(nli_task, monkeypatch) -> dict:
    """Round 1 of ``nli_task``, current, its target the stand-in, with the two ``PREMISES``: returns
    ``{premise text: Context}``."""
    from models_registry import inference
    from tests.factories.models_registry import make_stand_in
    from tests.factories.tasks import ContextFactory, open_round

    monkeypatch.setattr(inference, "predict", always_neutral)
    round_ = open_round(nli_task)
    make_stand_in(nli_task, round_)
    return {text: ContextFactory(round=round_, data={"premise": text}) for text in PREMISES}
