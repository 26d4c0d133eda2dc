"""The span model: decoding (hand logits), serving through the registry, training on a tiny backbone."""

from __future__ import annotations

import pytest

from engine.runtime.classifier import InferenceError, clear_cache, get_classifier
from engine.runtime.qa_inference import SpanPredictor, best_span, whole_words
from engine.runtime.qa_modeling import is_qa_model_dir
from engine.training.classifier import TrainingError
from engine.training.qa import RECIPES, QAItem, build_features, train_qa_model
from models_registry.inference import predict
from tests.helpers.tiny_qa import PASSAGES, build_tiny_qa_model


def test_best_span_pairs_start_and_end_by_summed_logits():
    #            CLS   q    SEP  p0   p1   p2   p3   SEP
    starts = [9.0, 8.0, 0.0, 1.0, 5.0, 0.5, 0.0, 7.0]
    ends = [9.0, 0.0, 0.0, 0.0, 1.0, 0.2, 4.0, 9.0]
    passage = [False, False, False, True, True, True, True, False]
    # CLS/question/SEP never count; best is start 4 (5.0) + end 6 (4.0) = 9.0
    assert best_span(starts, ends, passage, max_answer_tokens=30) == (4, 6, 9.0)
    # with at most 2 tokens 4..6 is too long; 4..4 (5.0 + 1.0 = 6.0) beats 4..5 (5.0 + 0.2 = 5.2)
    assert best_span(starts, ends, passage, max_answer_tokens=2) == (4, 4, 6.0)
    # an end before every start is never chosen
    assert best_span(
        [0, 0, 0, 0, 0, 9], [0, 0, 0, 9, 0, 0], [False, False, True, True, True, True], max_answer_tokens=30
    )[:2] in {(5, 5)}
    assert best_span([1.0], [1.0], [False], max_answer_tokens=3) is None


def test_whole_words_widens_to_word_pieces():
    word_ids = [None, 0, None, 0, 1, 1, 1, 2, None]
    assert whole_words(word_ids, 5, 5) == (4, 6)
    assert whole_words(word_ids, 3, 4) == (3, 6)


def test_registry_serves_a_qa_directory_as_a_span_predictor(tmp_path):
    path = build_tiny_qa_model(tmp_path / "qa")
    assert is_qa_model_dir(path)
    predictor = get_classifier(path)
    assert isinstance(predictor, SpanPredictor) and predictor.labels == []
    outputs = predictor.predict_batch([(p, "who won the game?") for p in PASSAGES])
    for passage, out in zip(PASSAGES, outputs, strict=True):
        assert set(out) == {"answer", "answer_start", "score"}
        start = out["answer_start"]
        assert out["answer"] and passage[start : start + len(out["answer"])] == out["answer"]
        assert 0.0 <= out["score"] <= 1.0
        assert out["answer"] == out["answer"].strip()
    clear_cache()


def test_long_passage_is_read_in_overlapping_windows(tmp_path):
    # 48-token windows: the answer region lies far beyond the first window
    path = build_tiny_qa_model(tmp_path / "qa-small", max_seq_length=48, doc_stride=16)
    passage = " ".join(["the cat is happy."] * 40) + " 😀 " + PASSAGES[1]
    predictor = SpanPredictor(path)
    encoding = __import__("engine.runtime.qa_inference", fromlist=["encode_windows"]).encode_windows(
        predictor.tokenizer, ["where?"], [passage], predictor.settings
    )
    assert len(encoding["input_ids"]) > 5  # many windows
    [out] = predictor.predict_batch([(passage, "where did they meet?")])
    assert passage[out["answer_start"] : out["answer_start"] + len(out["answer"])] == out["answer"]


def test_inputs_must_be_passage_question_pairs(tmp_path):
    predictor = SpanPredictor(build_tiny_qa_model(tmp_path / "qa"))
    with pytest.raises(InferenceError, match="pair"):
        predictor.predict_batch(["just a string"])
    assert predictor.predict_batch([]) == []


def test_features_point_at_the_answer_tokens(tmp_path):
    predictor = SpanPredictor(build_tiny_qa_model(tmp_path / "qa"))
    passage = "the cat and the dog are friends"
    item = QAItem("who are friends?", passage, "the dog", passage.index("the dog"))
    [feature] = build_features(predictor.tokenizer, [item], predictor.settings)
    tokens = predictor.tokenizer.convert_ids_to_tokens(feature["input_ids"])
    assert tokens[feature["start_positions"] : feature["end_positions"] + 1] == ["the", "dog"]


def _items():
    passage_a = "the cat is happy and the dog is sad"
    passage_b = "we love our friends and our neighbours"
    return [
        QAItem("who is happy?", passage_a, "the cat", 0, ("the cat", "cat")),
        QAItem("who is sad?", passage_a, "the dog", passage_a.index("the dog")),
        QAItem("who do we love?", passage_b, "our friends", passage_b.index("our friends")),
        QAItem("who else?", passage_b, "our neighbours", passage_b.index("our neighbours")),
    ]


def test_training_on_a_tiny_backbone_saves_a_servable_model(tiny_backbone_dir, tmp_path):
    items = _items()
    result = train_qa_model(
        train_items=items,
        dev_items=items[:2],
        output_dir=tmp_path / "trained",
        backbone_path=tiny_backbone_dir,
        overrides={"batch_size": 2, "epochs": 2, "train_max_seq_length": 64, "train_doc_stride": 16},
    )
    assert is_qa_model_dir(result.path)
    assert (result.path / "model.safetensors").is_file()
    assert result.n_train == 4 and result.n_dev == 2 and result.n_features == 4
    assert 0.0 <= result.dev_f1 <= 1.0 and 0.0 <= result.dev_exact_match <= result.dev_f1 + 1e-9
    assert result.details["top_layers"] == RECIPES["quick"]["top_layers"]
    assert len(result.details["history"]) == 2
    predictor = SpanPredictor(result.path)
    # served in the windows it was trained on (64 tokens, stride 16), not the 384-token default
    assert (predictor.settings["max_seq_length"], predictor.settings["doc_stride"]) == (64, 16)
    out = predictor.predict_batch([(items[0].passage, items[0].question)])[0]
    assert items[0].passage[out["answer_start"] :].startswith(out["answer"])


def test_training_refuses_answers_not_at_their_offset(tiny_backbone_dir, tmp_path):
    bad = QAItem("q?", "the cat", "dog", 0)
    with pytest.raises(TrainingError, match="not at its offset"):
        train_qa_model(
            train_items=[bad], dev_items=[], output_dir=tmp_path / "x", backbone_path=tiny_backbone_dir
        )
    with pytest.raises(TrainingError, match="unknown recipe"):
        train_qa_model(train_items=_items(), dev_items=[], output_dir=tmp_path / "x", recipe="slow")


@pytest.mark.django_db
def test_predict_builds_pairs_from_the_task_config(tiny_qa_registered_model, qa_contexts):
    context = qa_contexts[1]
    [out] = predict(tiny_qa_registered_model, [{**context.data, "question": "where did they meet?"}])
    passage = context.data["context"]
    assert passage[out["answer_start"] : out["answer_start"] + len(out["answer"])] == out["answer"]
    with pytest.raises(InferenceError, match="no field 'context'"):
        predict(tiny_qa_registered_model, [{"question": "no passage?"}])
