"""The ONNX Runtime path: export at registration, the agreement check, the runtime choice and its
fallbacks, and serving classifiers, pair models and span models from the exported graphs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.runtime import classifier as runtime_classifier
from engine.runtime import onnx_export
from engine.runtime.classifier import get_classifier
from engine.runtime.onnx_export import agreement, choose
from engine.runtime.runtimes import MANIFEST_FILE, ONNX_FP32, ONNX_INT8, TORCH, onnx_file
from models_registry import inference
from models_registry.models import RegisteredModel
from models_registry.services import register_local_model

pytestmark = pytest.mark.onnx

TEXTS = [
    "I loved it",
    "this is awful 😡",
    "مرحبا بكم",
    "a much longer sentence that goes on for a while",
    "ok",
]


def test_agreement_by_hand():
    reference = [
        {"label": "a", "probabilities": {"a": 0.9, "b": 0.1}},
        {"label": "b", "probabilities": {"a": 0.4, "b": 0.6}},
    ]
    candidate = [
        {"label": "a", "probabilities": {"a": 0.8, "b": 0.2}},
        {"label": "a", "probabilities": {"a": 0.55, "b": 0.45}},
    ]
    # labels: 1 of 2 agree; largest |p - p'| is |0.4 - 0.55| = |0.6 - 0.45| = 0.15
    assert agreement(reference, candidate) == {
        "n": 2,
        "label_agreement": 0.5,
        "max_probability_difference": pytest.approx(0.15),
    }
    spans = [
        {"answer": "Paris", "answer_start": 3, "score": 0.5},
        {"answer": "x", "answer_start": 0, "score": 0.2},
    ]
    other = [
        {"answer": "Paris", "answer_start": 3, "score": 0.45},
        {"answer": "x", "answer_start": 9, "score": 0.2},
    ]
    assert agreement(spans, other) == {
        "n": 2,
        "answer_agreement": 0.5,
        "max_score_difference": pytest.approx(0.05),
    }
    with pytest.raises(ValueError):
        agreement(reference, candidate[:1])


def test_choose_walks_down_from_the_preferred_runtime():
    passed = {"label_agreement": 1.0, "passed": True}
    int8_low = {"label_agreement": 0.97, "passed": False}
    assert choose(ONNX_INT8, {ONNX_FP32: passed, ONNX_INT8: passed}) == (ONNX_INT8, "")
    runtime, message = choose(ONNX_INT8, {ONNX_FP32: passed, ONNX_INT8: int8_low})
    assert runtime == ONNX_FP32
    assert (
        message == "int8 weights agreed with PyTorch on 97.0% of labels (needs 99.5%); serving the fp32 graph"
    )
    fp32_low = {"label_agreement": 0.99, "passed": False}
    runtime, message = choose(ONNX_INT8, {ONNX_FP32: fp32_low, ONNX_INT8: int8_low})
    assert runtime == TORCH
    assert message.endswith(
        "the fp32 graph agreed with PyTorch on 99.0% of labels (needs 100.0%); serving with PyTorch"
    )
    # fp32 asked for: int8's check does not matter
    assert choose(ONNX_FP32, {ONNX_FP32: passed, ONNX_INT8: int8_low}) == (ONNX_FP32, "")
    assert choose(TORCH, {ONNX_FP32: passed}) == (TORCH, "")


def _scoring_dataset(task, slug: str):
    """A scoring dataset of ``task`` with one item, so the leaderboard has a column to rank on."""
    from leaderboards.models import Dataset, DatasetItem

    dataset = Dataset.objects.create(task=task, slug=slug, name=slug, access=Dataset.Access.SCORING)
    DatasetItem.objects.create(dataset=dataset, external_id="a", inputs={"statement": "x"}, target="hateful")
    return dataset


def _register(task, path, **kwargs):
    return register_local_model(task=task, name="onnx-model", path=str(path), card={}, **kwargs)


@pytest.mark.django_db
def test_registration_exports_checks_and_serves_fp32_like_torch(hate_task, tiny_model_dir, settings):
    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    model = _register(hate_task, tiny_model_dir)
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.runtime == ONNX_FP32
    block = model.card["runtime"]
    assert block["runtime"] == ONNX_FP32 and block["preferred"] == ONNX_FP32 and block["message"] == ""
    fp32 = block["checks"][ONNX_FP32]
    assert fp32["passed"] and fp32["label_agreement"] == 1.0 and fp32["max_probability_difference"] < 1e-5
    assert fp32["n"] >= 30  # the probe sentences, no contexts in this task
    assert set(block["checks"]) == {ONNX_FP32, ONNX_INT8}
    manifest = json.loads((tiny_model_dir / MANIFEST_FILE).read_text())
    assert manifest["kind"] == "vectors" and manifest["inputs"] == ["input_ids", "attention_mask"]

    served = get_classifier(tiny_model_dir, runtime=ONNX_FP32)
    assert (
        served.graph is not None
        and served.weight_bytes() == onnx_file(tiny_model_dir, ONNX_FP32).stat().st_size
    )
    reference = get_classifier(tiny_model_dir).predict_batch(TEXTS)
    outputs = inference.predict(model, [{"statement": t} for t in TEXTS])
    for ref, out in zip(reference, outputs, strict=True):
        assert out["label"] == ref["label"]
        for label, p in ref["probabilities"].items():
            assert out["probabilities"][label] == pytest.approx(p, abs=1e-5)


@pytest.mark.django_db
def test_int8_is_chosen_only_when_it_agrees_enough(hate_task, tiny_model_dir, settings):
    settings.DYNABENCH_ONNX_INT8_MIN_AGREEMENT = 0.0
    model = _register(hate_task, tiny_model_dir)
    assert model.runtime == ONNX_INT8
    assert (
        get_classifier(tiny_model_dir, runtime=ONNX_INT8).weight_bytes()
        < get_classifier(tiny_model_dir, runtime=ONNX_FP32).weight_bytes()
    )
    settings.DYNABENCH_ONNX_INT8_MIN_AGREEMENT = 1.01  # cannot be met
    model = _register(hate_task, tiny_model_dir)
    assert model.runtime == ONNX_FP32
    assert model.card["runtime"]["message"].startswith("int8 weights agreed with PyTorch on ")
    assert model.card["runtime"]["message"].endswith("(needs 101.0%); serving the fp32 graph")


@pytest.mark.django_db
def test_a_model_that_cannot_be_exported_stays_on_torch_with_the_reason(
    hate_task, tiny_model_dir, monkeypatch
):
    import torch

    def boom(*args, **kwargs):
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(torch.onnx, "export", boom)
    model = _register(hate_task, tiny_model_dir)
    assert model.status == RegisteredModel.Status.READY
    assert model.runtime == TORCH
    assert model.card["runtime"]["message"] == (
        "could not export to ONNX: RuntimeError: unsupported operator; serving with PyTorch"
    )
    assert not (tiny_model_dir / "onnx").exists()
    assert inference.predict(model, [{"statement": "still answers"}])[0]["label"] in hate_task.cfg.labels


@pytest.mark.django_db
def test_an_uploaded_onnx_folder_is_replaced_by_the_platform_export(hate_task, tiny_model_dir, settings):
    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    planted = tiny_model_dir / "onnx"
    planted.mkdir()
    (planted / "model.fp32.onnx").write_bytes(b"not a graph")
    (planted / "extra.py").write_text("print('never run')")
    model = _register(hate_task, tiny_model_dir)
    assert model.runtime == ONNX_FP32
    assert sorted(p.name for p in planted.iterdir()) == [
        "check-inputs.json",
        "export.json",
        "model.fp32.onnx",
        "model.int8.onnx",
    ]
    assert onnx_file(tiny_model_dir, ONNX_FP32).stat().st_size > 1000


@pytest.mark.django_db
def test_runtime_torch_exports_nothing(hate_task, tiny_model_dir, settings):
    settings.DYNABENCH_MODEL_RUNTIME = TORCH
    model = _register(hate_task, tiny_model_dir)
    assert model.runtime == TORCH and model.card["runtime"]["checks"] == {}
    assert not (tiny_model_dir / "onnx").exists()


@pytest.mark.django_db
def test_a_new_graph_on_disk_is_loaded_again(hate_task, tiny_model_dir, settings):
    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    _register(hate_task, tiny_model_dir)
    first = get_classifier(tiny_model_dir, runtime=ONNX_FP32)
    assert get_classifier(tiny_model_dir, runtime=ONNX_FP32) is first
    onnx_export.export_onnx(tiny_model_dir, get_classifier(tiny_model_dir))  # swapped in: new inode
    assert get_classifier(tiny_model_dir, runtime=ONNX_FP32) is not first


def test_an_onnx_runtime_without_export_is_an_inference_error(tiny_model_dir):
    with pytest.raises(inference.InferenceError, match="no ONNX export"):
        get_classifier(tiny_model_dir, runtime=ONNX_INT8)
    with pytest.raises(ValueError, match="unknown runtime"):
        get_classifier(tiny_model_dir, runtime="tensorrt")


@pytest.mark.django_db
def test_a_pair_model_runs_both_segments_through_the_graph(nli_task, tmp_path, settings):
    from tests.models_registry.test_pair_model import _pair_model_dir

    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    path = _pair_model_dir(tmp_path)
    model = _register(nli_task, path)
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.runtime == ONNX_FP32, model.card["runtime"]
    fields = nli_task.cfg.model_input_fields
    inputs = [
        dict(zip(fields, pair, strict=True))
        for pair in [
            ("A man is sleeping.", "Nobody sleeps."),
            ("Two dogs run across a very wide green field in the sun.", "Animals move."),
            ("ok", "a much longer hypothesis than its premise, by many tokens"),
        ]
    ]
    texts = runtime_classifier.texts_for_inputs(fields, inputs)
    reference = get_classifier(path).predict_batch(texts)
    served = inference.predict(model, inputs)
    for ref, out in zip(reference, served, strict=True):
        assert out["label"] == ref["label"]
        for label, p in ref["probabilities"].items():
            assert out["probabilities"][label] == pytest.approx(p, abs=1e-5)


@pytest.mark.django_db
def test_a_span_model_answers_the_same_from_its_graph(qa_task, qa_round, tiny_qa_model_dir, settings):
    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    model = _register(qa_task, tiny_qa_model_dir)
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.runtime == ONNX_FP32, model.card["runtime"]
    check = model.card["runtime"]["checks"][ONNX_FP32]
    assert check["answer_agreement"] == 1.0 and check["max_score_difference"] < 1e-5
    manifest = json.loads((Path(tiny_qa_model_dir) / MANIFEST_FILE).read_text())
    assert manifest["kind"] == "span" and manifest["outputs"] == ["start_logits", "end_logits"]
    passage = qa_round.contexts.first().data["context"]
    inputs = [{"context": passage, "question": q} for q in ("Who?", "When did it happen?", "What is it?")]
    texts = runtime_classifier.texts_for_inputs(qa_task.cfg.model_input_fields, inputs)
    served = inference.predict(model, inputs)
    for ref, out in zip(get_classifier(tiny_qa_model_dir).predict_batch(texts), served, strict=True):
        assert (out["answer"], out["answer_start"]) == (ref["answer"], ref["answer_start"])
        assert out["score"] == pytest.approx(ref["score"], abs=1e-5)


@pytest.mark.django_db
def test_the_model_card_and_the_api_show_the_runtime_and_its_check(
    client, hate_task, tiny_model_dir, settings
):
    from django.urls import reverse

    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    model = _register(hate_task, tiny_model_dir)
    assert model.is_published
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    assert '<span data-runtime="onnx-fp32">ONNX Runtime, fp32</span>' in page
    n = model.card["runtime"]["checks"][ONNX_FP32]["n"]
    assert f"on {n} held-apart inputs" in page
    assert '<td>ONNX Runtime, fp32</td><td class="num">100.0%</td>' in page
    body = client.get(f"/api/models/{model.pk}/").json()
    assert body["runtime"] == ONNX_FP32
    assert body["runtime_check"]["checks"][ONNX_FP32]["label_agreement"] == 1.0


@pytest.mark.django_db
def test_evaluation_runs_the_served_runtime_and_counts_its_graph_as_weights(
    hate_task, tiny_model_dir, settings
):
    from leaderboards.evaluation import evaluate_model_on_dataset
    from leaderboards.models import Dataset, DatasetItem

    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    model = _register(hate_task, tiny_model_dir)
    dataset = Dataset.objects.create(task=hate_task, slug="onnx-eval", name="ONNX eval")
    for n, text in enumerate(TEXTS):
        DatasetItem.objects.create(
            dataset=dataset, external_id=f"i{n}", inputs={"statement": text}, target="hateful", tags=[str(n)]
        )
    on_onnx = evaluate_model_on_dataset(model, dataset)
    assert on_onnx.metrics["runtime"] == ONNX_FP32
    assert on_onnx.metrics["memory_method"].startswith("ONNX graph file + ")
    graph_bytes = onnx_file(tiny_model_dir, ONNX_FP32).stat().st_size
    working = on_onnx.metrics["working_memory"] * 1024**3
    assert on_onnx.metrics["memory"] * 1024**3 == pytest.approx(graph_bytes + working)

    model.runtime = TORCH
    on_torch = evaluate_model_on_dataset(model, dataset)
    assert on_torch.metrics["runtime"] == TORCH
    # the same predictions, and the working memory traced on the same torch forward
    assert on_onnx.perf == on_torch.perf and on_onnx.per_tag == on_torch.per_tag
    assert on_onnx.metrics["working_memory"] == on_torch.metrics["working_memory"]


@pytest.mark.django_db
def test_a_score_of_another_runtime_is_redone(hate_task, tiny_model_dir, settings):
    from leaderboards.models import Dataset, DatasetItem, Score
    from leaderboards.scheduling import request_evaluations

    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    model = _register(hate_task, tiny_model_dir)
    dataset = Dataset.objects.create(task=hate_task, slug="runtime-redo", name="Runtime redo")
    DatasetItem.objects.create(dataset=dataset, external_id="a", inputs={"statement": "x"}, target="hateful")
    Score.objects.filter(model=model).delete()
    score = Score.objects.create(
        model=model,
        dataset=dataset,
        status=Score.Status.DONE,
        perf=0.5,
        metrics={"n": 1, "runtime": ONNX_FP32},
    )
    assert request_evaluations(model=model, queue=False) == []  # same runtime, same items: kept
    RegisteredModel.objects.filter(pk=model.pk).update(runtime=ONNX_INT8)
    assert request_evaluations(model=model, queue=False) == [score.pk]
    score.refresh_from_db()
    assert score.status == Score.Status.PENDING


def test_int8_on_labelled_inputs_is_judged_on_accuracy():
    from engine.runtime.onnx_export import judge

    def out(label):
        return {
            "label": label,
            "probabilities": {"a": 1.0 if label == "a" else 0.0, "b": 0.0 if label == "a" else 1.0},
        }

    targets = ["a"] * 100 + ["b"] * 100
    reference = [out("a")] * 100 + [out("b")] * 99 + [out("a")]  # torch: 199/200 right
    # int8: 1 right label lost and the wrong one fixed (net 0), then 1 more lost: 198/200
    outputs = [out("b")] + [out("a")] * 99 + [out("b")] * 98 + [out("a"), out("b")]
    check = judge(ONNX_INT8, agreement(reference, outputs), targets, reference, outputs)
    assert check["rule"] == "accuracy"
    assert check["torch_accuracy"] == 0.995 and check["accuracy"] == 0.99
    assert check["accuracy_drop"] == pytest.approx(0.005)
    assert check["passed"]  # exactly half a point: allowed
    assert check["label_agreement"] == pytest.approx(197 / 200)  # the agreement rule would refuse it
    worse = [out("b"), out("b")] + outputs[2:]
    check = judge(ONNX_INT8, agreement(reference, worse), targets, reference, worse)
    assert check["accuracy_drop"] == pytest.approx(0.01) and not check["passed"]
    runtime, message = choose(
        ONNX_INT8, {ONNX_FP32: {"label_agreement": 1.0, "passed": True}, ONNX_INT8: check}
    )
    assert runtime == ONNX_FP32
    assert message == (
        "int8 weights lost 1.0 points of accuracy against PyTorch on 200 labelled held-apart inputs "
        "(at most 0.5 allowed); serving the fp32 graph"
    )
    # fp32 is always judged on identical labels, labels or not
    assert judge(ONNX_FP32, agreement(reference, outputs), targets, reference, outputs)["rule"] == "agreement"


@pytest.mark.django_db
def test_the_leaderboard_shows_each_models_runtime(client, hate_task, tiny_model_dir, settings):
    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    _scoring_dataset(hate_task, "runtime-board")
    model = _register(hate_task, tiny_model_dir)
    page = client.get(f"/tasks/{hate_task.slug}/leaderboard/").content.decode()
    # A link, not a hover title only: touch and keyboard users reach the runtime block it names. Its
    # accessible name starts with its visible text, so speech control can say it.
    model_url = f"/models/{model.pk}/"
    assert (
        f'<a class="badge runtime-badge" data-runtime="onnx-fp32" href="{model_url}#runtime" '
        'title="Runtime it is served and measured with: ONNX Runtime, fp32" '
        'aria-label="ONNX fp32: ONNX Runtime, fp32">ONNX fp32</a>'
    ) in page
    model_page = client.get(model_url).content.decode()
    assert '<dt id="runtime">Runtime</dt>' in model_page


def test_the_settings_list_the_runtimes_the_registry_knows():
    import re

    from engine.runtime.runtimes import RUNTIMES

    source = (Path(__file__).resolve().parents[2] / "dynabench" / "settings.py").read_text()
    listed = re.search(r"DYNABENCH_MODEL_RUNTIME not in \(([^)]*)\)", source).group(1)
    assert tuple(v.strip().strip('"') for v in listed.split(",")) == RUNTIMES


@pytest.mark.django_db
def test_a_model_whose_graph_is_gone_is_served_by_torch_meanwhile(hate_task, tiny_model_dir, settings):
    import shutil

    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    model = _register(hate_task, tiny_model_dir)
    expected = get_classifier(tiny_model_dir).predict_batch(["retrained meanwhile"])
    runtime_classifier.clear_cache()
    shutil.rmtree(tiny_model_dir / "onnx")  # as after a retraining swapped new weights in, before export
    assert inference.predict(model, [{"statement": "retrained meanwhile"}]) == expected
    # a graph that is there but broken is an error, not a silent fallback
    onnx_file(tiny_model_dir, ONNX_FP32).parent.mkdir()
    (tiny_model_dir / MANIFEST_FILE).write_text('{"kind": "vectors"}')
    onnx_file(tiny_model_dir, ONNX_FP32).write_bytes(b"garbage")
    with pytest.raises(inference.InferenceError, match="ONNX Runtime cannot open the onnx-fp32 graph"):
        inference.predict(model, [{"statement": "x"}])


@pytest.mark.django_db
def test_checking_again_repeats_the_labelled_check_not_the_probe_sentences(
    hate_task, tiny_model_dir, settings
):
    from models_registry.services import run_check

    settings.DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP = 1.0
    inputs = [{"statement": f"held-apart example number {i}"} for i in range(50)]
    targets = ["hateful" if i % 2 else "not-hateful" for i in range(50)]
    model = _register(hate_task, tiny_model_dir, check_inputs=inputs, check_targets=targets)
    first = model.card["runtime"]["checks"][ONNX_INT8]
    assert first["n"] == 50 and first["rule"] == "accuracy"
    model.status = RegisteredModel.Status.CHECKING
    assert run_check(model) == (RegisteredModel.Status.READY, "")
    again = RegisteredModel.objects.get(pk=model.pk).card["runtime"]["checks"][ONNX_INT8]
    assert again["n"] == 50 and again["rule"] == "accuracy"
    assert again["accuracy"] == first["accuracy"] and again["torch_accuracy"] == first["torch_accuracy"]


@pytest.mark.django_db
def test_a_first_check_never_reads_check_inputs_an_upload_carried(hate_task, tiny_model_dir):
    from models_registry.services import run_check

    planted = tiny_model_dir / "onnx"
    planted.mkdir()
    (planted / "check-inputs.json").write_text('{"texts": ["easy"], "targets": ["hateful"]}')
    model = RegisteredModel.objects.create(task=hate_task, name="fresh-upload", path=str(tiny_model_dir))
    model.status = RegisteredModel.Status.CHECKING
    assert run_check(model)[0] == RegisteredModel.Status.READY
    check = RegisteredModel.objects.get(pk=model.pk).card["runtime"]["checks"][ONNX_INT8]
    assert check["n"] >= 30 and check["rule"] == "agreement"  # the probe sentences, not the planted text


@pytest.mark.django_db
def test_a_model_being_checked_again_keeps_its_leaderboard_row(client, hate_task, tiny_model_dir, settings):
    from leaderboards.models import Score

    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    _scoring_dataset(hate_task, "recheck")
    model = _register(hate_task, tiny_model_dir)
    other = RegisteredModel.objects.create(
        task=hate_task, name="never-scored", status=RegisteredModel.Status.CHECKING, is_published=True
    )
    from leaderboards.jobs import run_evaluation_job
    from leaderboards.scheduling import request_evaluations

    for score_id in request_evaluations(model=model, queue=False):
        run_evaluation_job(score_id)
    assert Score.objects.filter(model=model, status=Score.Status.DONE).exists()

    def rows():
        page = client.get(f"/tasks/{hate_task.slug}/leaderboard/").content.decode()
        return [pk for pk in (model.pk, other.pk) if f'data-model="{pk}"' in page]

    assert rows() == [model.pk]
    from models_registry.services import check_again

    check_again(model)  # a ready model stays ready while it is checked again
    RegisteredModel.objects.filter(pk=model.pk).update(recheck=RegisteredModel.Recheck.RUNNING)
    assert rows() == [model.pk]  # kept while checked again
    RegisteredModel.objects.filter(pk=model.pk).update(status=RegisteredModel.Status.FAILED)
    assert rows() == []  # a failed check drops it; a model never ready is not shown while checked
