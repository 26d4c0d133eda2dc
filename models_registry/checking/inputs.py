"""Held-apart inputs on which an ONNX export is checked against PyTorch (``onnx_export``).

A trained model is checked on its rounds' dev and test examples (the caller passes them). Any other
registration is checked on ``held_apart_inputs(task)``: the task's stored contexts (passages, premises)
for its context fields and ``PROBE_SENTENCES`` for the rest. The sentences are written for this check,
never trained on, and cover what annotators type: questions, negation, emoji, right-to-left script,
accents, CRLF, numbers and a long run-on text that is truncated.
"""

from __future__ import annotations

from tasks.models import Context, Task

#: Written for the check; none comes from a data set a model could have been trained on.
PROBE_SENTENCES = (
    "I really enjoyed the film, the acting was superb.",
    "This is the worst service I have ever had.",
    "The package arrived on Tuesday.",
    "Not bad at all, I would go back.",
    "I don't think that is a good idea.",
    "People like you should not be allowed to speak here.",
    "What time does the museum open on Sundays?",
    "The committee postponed the vote until next spring.",
    "She said it was fine, but her face said otherwise 🙄",
    "We loved it!!! 😍😍😍",
    "Meh. It was okay I guess.",
    "They are all the same, every single one of them.",
    "The café on the corner serves crêpes and piña coladas.",
    "مرحبا بكم في المنصة، هذا نص تجريبي.",
    "שלום, זה משפט לבדיקה.",
    "Line one of a note\r\nand line two of it.",
    "Prices rose by 3.5% in 2023, compared with 7% the year before.",
    "Nobody said the exam would be easy, and nobody was surprised.",
    "The river flooded the lower town after three days of rain.",
    "I can't believe how rude the staff were to my grandmother.",
    "Absolutely fantastic, would recommend to anyone.",
    "The new policy affects immigrants more than anyone else.",
    "He fixed the bike in ten minutes and refused to be paid.",
    "Is it true that octopuses have three hearts?",
    "That joke was not funny the first time and it is not funny now.",
    "The weather is grey, the trains are late, and I am out of coffee.",
    "A child is playing with a dog in the park.",
    "Two men are sitting on a bench reading newspapers.",
    "The restaurant was empty, which should have told us something.",
    "women are not worse at maths, that claim is false",
    " ".join(["The long statement goes on and on to test truncation."] * 30),
    "ok",
)


def held_apart_inputs(task: Task, limit: int = 200) -> list[dict]:
    """Model inputs (field -> text) for the check of a model of ``task``.

    The task's contexts (oldest first) fill the context fields they hold; ``PROBE_SENTENCES`` fill the
    other fields, in turn, so each input differs. Without contexts, the sentences alone (each field a
    different sentence).

    Returns:
        At most ``limit`` dicts with every one of ``task.cfg.model_input_fields``; at least
        ``len(PROBE_SENTENCES)`` when ``limit`` allows.
    """
    fields = task.cfg.model_input_fields
    contexts = list(Context.objects.filter(task=task).order_by("pk").values_list("data", flat=True)[:limit])
    rows: list[dict] = []
    count = max(len(PROBE_SENTENCES), min(len(contexts), limit))
    for n in range(min(count, limit)):
        context = contexts[n] if n < len(contexts) and isinstance(contexts[n], dict) else {}
        row = {}
        for k, name in enumerate(fields):
            value = context.get(name)
            row[name] = (
                value
                if isinstance(value, str) and value.strip()
                else PROBE_SENTENCES[(n + 7 * k) % len(PROBE_SENTENCES)]
            )
        rows.append(row)
    return rows
