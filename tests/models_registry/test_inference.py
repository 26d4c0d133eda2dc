"""Loading and running classifiers: roundtrip, labels, the per-process cache, threads, failures."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from engine.runtime import classifier as runtime_classifier
from engine.runtime.classifier import InferenceError, clear_cache, get_classifier
from models_registry.inference import predict
from tests.helpers.tiny_models import build_tiny_classifier

TEXTS = ["I hate 🐷 people", "what a nice day 🌹", "", "they should go back home " * 40]


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def test_predict_batch_outputs(tiny_model_dir):
    classifier = get_classifier(tiny_model_dir)
    assert classifier.labels == ["hateful", "not-hateful"]
    outputs = classifier.predict_batch(TEXTS, batch_size=3)
    assert len(outputs) == len(TEXTS)
    for out in outputs:
        assert set(out["probabilities"]) == {"hateful", "not-hateful"}
        assert sum(out["probabilities"].values()) == pytest.approx(1.0, abs=1e-6)
        assert out["label"] == max(out["probabilities"], key=out["probabilities"].get)


def test_batch_size_and_order_do_not_change_outputs(tiny_model_dir):
    classifier = get_classifier(tiny_model_dir)
    one_by_one = [classifier.predict_batch([t])[0] for t in TEXTS]
    together = classifier.predict_batch(TEXTS, batch_size=32)
    for a, b in zip(one_by_one, together, strict=True):
        assert a["label"] == b["label"]
        for label in a["probabilities"]:
            assert a["probabilities"][label] == pytest.approx(b["probabilities"][label], abs=1e-5)


def test_text_pairs(tiny_model_dir):
    outputs = get_classifier(tiny_model_dir).predict_batch([("a premise", "a hypothesis"), ("🐷", "🌹")])
    assert len(outputs) == 2


def test_save_load_roundtrip_gives_identical_probabilities(tmp_path, tiny_model_dir):
    from transformers import AutoModelForSequenceClassification

    before = get_classifier(tiny_model_dir).predict_batch(TEXTS)
    # Load through the Auto classes and save again: the copy must predict exactly the same.
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    copy_dir = tmp_path / "copy"
    model.save_pretrained(copy_dir)
    get_classifier(tiny_model_dir).tokenizer.save_pretrained(copy_dir)
    assert (copy_dir / "model.safetensors").is_file()
    after = get_classifier(copy_dir).predict_batch(TEXTS)
    assert after == before
    assert type(model).__name__ == "MeanPoolClassifier"
    assert model.config.preprocessing["emoji"] == "names"


def test_labels_are_preserved_in_order(tmp_path):
    path = build_tiny_classifier(tmp_path / "three", labels=("zeta", "alpha", "mid"))
    classifier = get_classifier(path)
    assert classifier.labels == ["zeta", "alpha", "mid"]
    [out] = classifier.predict_batch(["hello"])
    assert list(out["probabilities"]) == ["zeta", "alpha", "mid"]


def test_preprocessing_is_applied_at_prediction(tiny_model_dir):
    classifier = get_classifier(tiny_model_dir)
    assert classifier.predict_batch(["i love 🐷"]) == classifier.predict_batch(["i love pig face"])


def test_cache_returns_the_same_instance(tiny_model_dir):
    first = get_classifier(tiny_model_dir)
    assert get_classifier(str(tiny_model_dir)) is first
    assert get_classifier(Path(tiny_model_dir) / ".") is first
    clear_cache(tiny_model_dir)
    assert get_classifier(tiny_model_dir) is not first


def test_concurrent_first_calls_load_once(tiny_model_dir, monkeypatch):
    loads = []
    real_init = runtime_classifier.Classifier.__init__

    def counting_init(self, *args, **kwargs):
        loads.append(threading.get_ident())
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(runtime_classifier.Classifier, "__init__", counting_init)
    barrier = threading.Barrier(8)
    results, errors = [], []

    def worker():
        try:
            barrier.wait()
            results.append(get_classifier(tiny_model_dir))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(loads) == 1
    assert len(results) == 8 and all(r is results[0] for r in results)


def test_missing_directory(tmp_path):
    with pytest.raises(InferenceError, match="does not exist"):
        get_classifier(tmp_path / "nowhere")


def test_pickle_only_weights_are_refused(tmp_path, tiny_model_dir):
    (tiny_model_dir / "model.safetensors").rename(tiny_model_dir / "pytorch_model.bin")
    with pytest.raises(InferenceError, match="pickle"):
        get_classifier(tiny_model_dir)


def test_missing_config(tiny_model_dir):
    (tiny_model_dir / "config.json").unlink()
    with pytest.raises(InferenceError, match="config.json"):
        get_classifier(tiny_model_dir)


def test_corrupt_weights_raise_inference_error_and_are_not_cached(tiny_model_dir, tmp_path):
    good = tmp_path / "good.safetensors"
    shutil.copy(tiny_model_dir / "model.safetensors", good)
    (tiny_model_dir / "model.safetensors").write_bytes(b"\x00\x01 this is not a safetensors file")
    with pytest.raises(InferenceError, match="could not load"):
        get_classifier(tiny_model_dir)
    # Fixing the files is enough: a failure is not cached.
    shutil.copy(good, tiny_model_dir / "model.safetensors")
    assert get_classifier(tiny_model_dir).labels == ["hateful", "not-hateful"]


def test_crash_during_prediction_is_an_inference_error(tiny_model_dir, monkeypatch):
    classifier = get_classifier(tiny_model_dir)

    def boom(**kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(classifier, "model", boom)
    with pytest.raises(InferenceError, match="RuntimeError: out of memory"):
        classifier.predict_batch(["hello"])


def test_predict_with_registered_model(tiny_registered_model):
    outputs = predict(tiny_registered_model, [{"statement": "I hate 🐍"}, {"statement": "nice"}])
    assert [set(o) for o in outputs] == [{"label", "probabilities"}] * 2


def test_predict_missing_field(tiny_registered_model):
    with pytest.raises(InferenceError, match="no field 'statement'"):
        predict(tiny_registered_model, [{"text": "hello"}])


def test_predict_wraps_a_missing_directory(tiny_registered_model):
    shutil.rmtree(tiny_registered_model.path)
    clear_cache()
    with pytest.raises(InferenceError, match=r"^model tiny-target: .*does not exist"):
        predict(tiny_registered_model, [{"statement": "hello"}])


def test_importing_inference_loads_no_torch():
    import subprocess
    import sys

    code = "import sys; import engine.runtime.classifier, engine.runtime.preprocessing; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_token_count_is_untruncated_with_the_special_tokens(tiny_model_dir):
    """[CLS] they are our friends [SEP] = 6 (each tiny-vocabulary word is one piece); a pair adds its
    second text and [SEP]; 300 words count 302, past the 128 the model reads."""
    classifier = get_classifier(tiny_model_dir)
    assert classifier.token_count("they are our friends") == 6
    assert classifier.token_count(("they are our friends", "hello world")) == 9
    assert classifier.token_count(" ".join(["people"] * 300)) == 302
    assert classifier.max_length == 128
