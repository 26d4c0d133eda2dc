"""Evaluating a span model on a QA dataset: SQuAD F1 / EM per dataset, by hand."""

from __future__ import annotations

import difflib

import pytest

from engine.runtime.qa_inference import SpanPredictor
from leaderboards.evaluation import EvaluationError, evaluate_model_on_dataset
from leaderboards.models import Dataset, DatasetItem

pytestmark = pytest.mark.django_db

PASSAGE = "The Denver Broncos defeated the Carolina Panthers 24-10 at Levi's Stadium in Santa Clara."


def _dataset(task, items, slug="qa-test"):
    dataset = Dataset.objects.create(
        task=task, slug=slug, name=slug, kind=Dataset.Kind.STATIC, access=Dataset.Access.SCORING
    )
    for n, (question, target) in enumerate(items):
        DatasetItem.objects.create(
            dataset=dataset,
            external_id=f"q{n}",
            inputs={"context": PASSAGE, "question": question},
            target=target,
            tags=["article:Super_Bowl_50"],
        )
    return dataset


def test_perf_is_squad_f1_with_exact_match_beside_it(tiny_qa_registered_model, monkeypatch):
    answers = {"Who won?": "Broncos", "Where?": "Levi's Stadium", "Score?": "24-10 at Levi's"}

    def fake_predict(self, texts, batch_size=16):
        # a model that sees through typos and casing: it answers the closest known question
        known = [difflib.get_close_matches(q, answers, n=1, cutoff=0.0)[0] for _, q in texts]
        return [
            {"answer": answers[k], "answer_start": PASSAGE.index(answers[k]), "score": 0.5} for k in known
        ]

    monkeypatch.setattr(SpanPredictor, "predict_batch", fake_predict)
    dataset = _dataset(
        tiny_qa_registered_model.task,
        [
            # "broncos" vs "denver broncos": P 1, R 1/2 -> F1 2/3; vs "broncos" (2nd answer) -> 1
            (
                "Who won?",
                {"answer": "Denver Broncos", "answer_start": 4, "answers": ["Denver Broncos", "Broncos"]},
            ),
            # exact after normalisation -> 1, EM 1
            ("Where?", {"answer": "Levi's Stadium", "answer_start": 59}),
            # "2410 at levis" vs "2410": P 1/3, R 1 -> F1 1/2, EM 0
            ("Score?", {"answer": "24-10", "answer_start": 50}),
        ],
    )
    evaluation = evaluate_model_on_dataset(tiny_qa_registered_model, dataset)
    assert evaluation.perf == pytest.approx((1 + 1 + 0.5) / 3)
    assert evaluation.metrics["f1"] == pytest.approx(2.5 / 3)
    assert evaluation.metrics["exact_match"] == pytest.approx(2 / 3)
    assert "accuracy" not in evaluation.metrics and evaluation.metrics["perf_metric"] == "squad_f1"
    assert evaluation.per_tag == {"article:Super_Bowl_50": {"n": 3, "correct": 2, "accuracy": 2 / 3}}
    assert evaluation.metrics["n"] == 3 and evaluation.metrics["throughput"] > 0
    # robustness: the answers on perturbed questions are the same, so their F1 against the originals is 1
    assert evaluation.metrics["robustness"] == pytest.approx(1.0) and evaluation.metrics["robustness_n"] >= 1
    assert evaluation.metrics["fairness"] is None  # not a delta metric of the QA task


def test_real_tiny_model_scores_are_consistent_with_its_answers(tiny_qa_registered_model):
    from core.metrics import squad_exact_match, squad_f1

    items = [
        ("Who won the game?", {"answer": "Denver Broncos", "answer_start": 4}),
        ("Where was it played?", {"answer": "Levi's Stadium", "answer_start": 59}),
    ]
    dataset = _dataset(tiny_qa_registered_model.task, items)
    evaluation = evaluate_model_on_dataset(tiny_qa_registered_model, dataset)
    from engine.runtime.classifier import get_classifier

    outputs = get_classifier(tiny_qa_registered_model.path).predict_batch([(PASSAGE, q) for q, _ in items])
    predicted = [o["answer"] for o in outputs]
    gold = [t for _, t in items]
    assert evaluation.perf == pytest.approx(squad_f1(gold, predicted))
    assert evaluation.metrics["exact_match"] == pytest.approx(squad_exact_match(gold, predicted))


def test_label_targets_are_refused_for_a_span_task(tiny_qa_registered_model):
    dataset = _dataset(tiny_qa_registered_model.task, [("Who?", "not-a-span")], slug="bad")
    dataset.items.update(target={"label": "x"})
    with pytest.raises(EvaluationError, match="not span answers"):
        evaluate_model_on_dataset(tiny_qa_registered_model, dataset)
