"""Writing QA examples: the span target in code points, the server finding the span, the verdict."""

from __future__ import annotations

import pytest

from annotation.models import Example
from annotation.services import ExampleError, create_example

pytestmark = pytest.mark.django_db


def test_selected_answer_is_stored_with_its_code_point_offset(
    annotator, tiny_qa_registered_model, qa_contexts
):
    context = qa_contexts[1]  # "🎉 The party 👨‍👩‍👧 met at the café in מרכז העיר ..."
    passage = context.data["context"]
    start = passage.index("מרכז העיר")
    example, created = create_example(
        task=tiny_qa_registered_model.task,
        annotator=annotator,
        inputs={"question": "Where did the party meet?"},
        target={"answer": "מרכז העיר", "answer_start": start},
        context=context,
    )
    assert created
    # "🎉 The party " 12 + ZWJ family 5 + " met at the " 12 + "cafe" and U+0301 5 + " in " 4 = 38 code
    # points (a browser counts 42 UTF-16 units: the four astral emoji take two each)
    assert start == 38
    assert example.target == {"answer": "מרכז העיר", "answer_start": 38}
    [prediction] = example.predictions.all()
    out = prediction.output
    assert set(out) == {"answer", "answer_start", "score"}
    assert passage[out["answer_start"] : out["answer_start"] + len(out["answer"])] == out["answer"]
    assert prediction.label == out["answer"][:100]
    # the verdict is the string_f1 rule on the model's answer, decided here
    from core.metrics import squad_f1_score

    assert example.model_wrong is (squad_f1_score(out["answer"], "מרכז העיר") < 0.4)
    assert prediction.model_wrong is example.model_wrong


def test_typed_answer_without_offset_is_found_by_the_server(annotator, tiny_qa_registered_model, qa_contexts):
    context = qa_contexts[0]
    example, _ = create_example(
        task=tiny_qa_registered_model.task,
        annotator=annotator,
        inputs={"question": "Who won?"},
        target={"answer": "  Denver Broncos "},
        context=context,
    )
    assert example.target == {"answer": "Denver Broncos", "answer_start": 49}


def test_answer_not_in_passage_is_refused_with_a_field_error(
    annotator, tiny_qa_registered_model, qa_contexts
):
    with pytest.raises(ExampleError) as info:
        create_example(
            task=tiny_qa_registered_model.task,
            annotator=annotator,
            inputs={"question": "Who lost?"},
            target={"answer": "New England Patriots"},
            context=qa_contexts[0],
        )
    assert "does not occur in the passage" in " ".join(info.value.errors["answer"])
    assert Example.objects.count() == 0


def test_answer_at_a_wrong_offset_is_refused(annotator, tiny_qa_registered_model, qa_contexts):
    with pytest.raises(ExampleError) as info:
        create_example(
            task=tiny_qa_registered_model.task,
            annotator=annotator,
            inputs={"question": "Who won?"},
            target={"answer": "Denver Broncos", "answer_start": 3},
            context=qa_contexts[0],
        )
    assert "first occurs at offset 49" in " ".join(info.value.errors["answer"])


def test_a_span_answer_needs_a_context(annotator, tiny_qa_registered_model):
    with pytest.raises(ExampleError) as info:
        create_example(
            task=tiny_qa_registered_model.task,
            annotator=annotator,
            inputs={"question": "Who won?"},
            target={"answer": "x"},
        )
    assert "context" in info.value.errors


def test_model_wrong_follows_the_f1_threshold(annotator, tiny_qa_registered_model, qa_contexts, monkeypatch):
    from models_registry import inference

    context = qa_contexts[0]
    passage = context.data["context"]

    def answer(text):
        return lambda model, inputs: [{"answer": text, "answer_start": passage.index(text), "score": 0.5}]

    task = tiny_qa_registered_model.task
    # "Denver Broncos defeated" vs "Denver Broncos": P 2/3, R 1 -> F1 0.8: not fooled
    monkeypatch.setattr(inference, "predict", answer("Denver Broncos defeated"))
    ex, _ = create_example(
        task=task,
        annotator=annotator,
        inputs={"question": "Who won?"},
        target={"answer": "The Denver Broncos"},
        context=context,
    )
    assert ex.model_wrong is False
    # "Carolina Panthers" vs "Denver Broncos": F1 0: fooled
    monkeypatch.setattr(inference, "predict", answer("Carolina Panthers"))
    ex, _ = create_example(
        task=task,
        annotator=annotator,
        inputs={"question": "Who won the game?"},
        target={"answer": "Denver Broncos"},
        context=context,
    )
    assert ex.model_wrong is True
    assert ex.predictions.get().output == {"answer": "Carolina Panthers", "answer_start": 77, "score": 0.5}


def test_a_crashing_qa_model_keeps_the_example(annotator, tiny_qa_registered_model, qa_contexts, monkeypatch):
    from models_registry import inference

    def crash(model, inputs):
        raise inference.InferenceError("boom")

    monkeypatch.setattr(inference, "predict", crash)
    ex, _ = create_example(
        task=tiny_qa_registered_model.task,
        annotator=annotator,
        inputs={"question": "Who won?"},
        target={"answer": "Denver Broncos"},
        context=qa_contexts[0],
    )
    assert ex.model_wrong is None and ex.prediction_status == "failed"
    assert ex.target == {"answer": "Denver Broncos", "answer_start": 49}


def test_registering_a_classifier_for_the_qa_task_fails_clearly(qa_task, tiny_model_dir):
    from models_registry.services import register_local_model

    model = register_local_model(task=qa_task, name="wrong-kind", path=str(tiny_model_dir), card={})
    assert model.status == model.Status.FAILED
    assert "labels" in model.error_message
