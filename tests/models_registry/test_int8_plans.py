"""int8 plans: which MatMuls stay fp32, and registration keeping the fastest plan that passes its check."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from engine.runtime import onnx_export
from engine.runtime.classifier import get_classifier
from engine.runtime.int8_plans import ALL, FFN_FP32, FFN_OUTPUT_FP32, PLANS, check_plan_names
from engine.runtime.runtimes import MANIFEST_FILE, ONNX_FP32, ONNX_INT8, onnx_file
from models_registry.services import register_local_model

pytestmark = pytest.mark.onnx

LAYERS = 2  # tests.helpers.tiny_models.build_tiny_classifier


def _weight_matmuls(path: Path) -> list[str]:
    """Names of the MatMul nodes of a graph file that multiply by a stored weight (fp32 weights: the
    quantizer turns the others into integer MatMuls; attention's own MatMuls have no stored weight)."""
    import onnx

    graph = onnx.load(str(path))
    weights = {i.name for i in graph.graph.initializer}
    return [n.name for n in graph.graph.node if n.op_type == "MatMul" and n.input[1] in weights]


@pytest.fixture
def exported(tiny_model_dir):
    onnx_export.export_onnx(tiny_model_dir, get_classifier(tiny_model_dir), ALL)
    return tiny_model_dir


def test_each_plan_keeps_its_matmuls_in_fp32(exported):
    import onnx

    graph = onnx.load(str(onnx_file(exported, ONNX_FP32)))
    # Per layer: query, key, value, attention output, feed-forward input, feed-forward output.
    assert len(_weight_matmuls(onnx_file(exported, ONNX_FP32))) == 6 * LAYERS
    assert ALL.excluded(graph) == []
    assert FFN_OUTPUT_FP32.excluded(graph) == [
        f"/bert/encoder/layer.{i}/output/dense/MatMul" for i in range(LAYERS)
    ]
    assert FFN_FP32.excluded(graph) == [
        f"/bert/encoder/layer.{i}/{part}/dense/MatMul"
        for i in range(LAYERS)
        for part in ("intermediate", "output")
    ]
    assert _weight_matmuls(onnx_file(exported, ONNX_INT8)) == []  # exported with ALL


def test_requantize_replaces_the_int8_graph_and_records_the_plan(exported):
    onnx_export.requantize(exported, FFN_OUTPUT_FP32)
    assert _weight_matmuls(onnx_file(exported, ONNX_INT8)) == [
        f"/bert/encoder/layer.{i}/output/dense/MatMul" for i in range(LAYERS)
    ]
    manifest = json.loads((exported / MANIFEST_FILE).read_text())
    assert manifest["int8_plan"] == "ffn-output-fp32"
    assert manifest["int8_fp32_parts"] == "feed-forward output MatMuls in fp32"
    assert manifest["kind"] == "vectors"  # the rest of the manifest is kept
    assert sorted(p.name for p in (exported / "onnx").iterdir()) == [
        "export.json",
        "model.fp32.onnx",
        "model.int8.onnx",
    ]  # no partial files left behind


def test_plan_names_are_checked_and_put_fastest_first():
    assert check_plan_names(["ffn-fp32", " all ", "all"]) == ["all", "ffn-fp32"]
    with pytest.raises(ValueError, match=r"unknown int8 plan\(s\) \['fp16'\]"):
        check_plan_names(["all", "fp16"])
    with pytest.raises(ValueError, match="at least one"):
        check_plan_names(["", " "])


def test_the_settings_list_the_plans_the_registry_knows(settings):
    source = (Path(__file__).resolve().parents[2] / "dynabench" / "settings.py").read_text()
    listed = re.search(r"DYNABENCH_ONNX_INT8_PLANS\) - \{([^}]*)\}", source).group(1)
    assert {v.strip().strip('"') for v in listed.split(",")} == {p.name for p in PLANS}
    assert settings.DYNABENCH_ONNX_INT8_PLANS == [p.name for p in PLANS]


def _failing_plans(monkeypatch, model_dir: Path, failing: set[str]) -> list[str]:
    """Make the int8 check fail while the graph on disk was made with a plan of ``failing``; returns
    the list the plans judged are appended to, in order."""
    judged: list[str] = []
    real_judge = onnx_export.judge

    def judge(runtime, check, targets, reference, outputs):
        result = real_judge(runtime, check, targets, reference, outputs)
        if runtime == ONNX_INT8:
            # The export being checked, in its own folder until it is chosen.
            (manifest,) = model_dir.glob(".onnx-export-*/export.json")
            plan = json.loads(manifest.read_text())["int8_plan"]
            judged.append(plan)
            result["passed"] = plan not in failing
        return result

    monkeypatch.setattr(onnx_export, "judge", judge)
    return judged


@pytest.mark.django_db
def test_registration_keeps_the_fastest_plan_that_passes(
    client, hate_task, tiny_model_dir, monkeypatch, settings
):
    settings.DYNABENCH_ONNX_INT8_MIN_AGREEMENT = 0.0
    judged = _failing_plans(monkeypatch, tiny_model_dir, failing={"all"})
    model = register_local_model(task=hate_task, name="planned", path=str(tiny_model_dir), card={})
    assert judged == ["all", "ffn-output-fp32"]
    assert model.runtime == ONNX_INT8 and model.card["runtime"]["message"] == ""
    check = model.card["runtime"]["checks"][ONNX_INT8]
    assert check["plan"] == "ffn-output-fp32"
    assert [(t["plan"], t["passed"]) for t in check["plans_tried"]] == [
        ("all", False),
        ("ffn-output-fp32", True),
    ]
    assert set(check["plans_tried"][0]) == {"plan", "passed", "label_agreement"}
    # The graph served is the one that passed.
    assert len(_weight_matmuls(onnx_file(tiny_model_dir, ONNX_INT8))) == LAYERS
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    assert (
        'ONNX Runtime, int8 weights<br><small class="muted">feed-forward output MatMuls in fp32</small>'
        in page
    )


@pytest.mark.django_db
def test_when_no_plan_passes_the_most_faithful_stays_and_fp32_serves(
    hate_task, tiny_model_dir, monkeypatch, settings
):
    judged = _failing_plans(monkeypatch, tiny_model_dir, failing={p.name for p in PLANS})
    model = register_local_model(task=hate_task, name="planned", path=str(tiny_model_dir), card={})
    assert judged == ["all", "ffn-output-fp32", "ffn-fp32"]
    assert model.runtime == ONNX_FP32
    assert model.card["runtime"]["checks"][ONNX_INT8]["plan"] == "ffn-fp32"
    assert len(_weight_matmuls(onnx_file(tiny_model_dir, ONNX_INT8))) == 2 * LAYERS
    assert model.card["runtime"]["message"].startswith("int8 weights agreed with PyTorch on ")


@pytest.mark.django_db
def test_only_the_configured_plans_are_tried_and_fp32_preferred_tries_one(
    hate_task, tiny_model_dir, monkeypatch, settings
):
    judged = _failing_plans(monkeypatch, tiny_model_dir, failing=set())
    settings.DYNABENCH_ONNX_INT8_PLANS = ["ffn-fp32", "ffn-output-fp32"]
    settings.DYNABENCH_ONNX_INT8_MIN_AGREEMENT = 0.0
    register_local_model(task=hate_task, name="planned", path=str(tiny_model_dir), card={})
    assert judged == ["ffn-output-fp32"]
    judged.clear()
    settings.DYNABENCH_MODEL_RUNTIME = ONNX_FP32
    model = register_local_model(task=hate_task, name="planned-2", path=str(tiny_model_dir), card={})
    assert judged == ["ffn-fp32"]  # int8 is not served: the most faithful allowed plan, once
    assert model.card["runtime"]["checks"][ONNX_INT8]["plans_tried"] == [
        {"plan": "ffn-fp32", "passed": True, "label_agreement": pytest.approx(1.0, abs=0.2)}
    ]


def _settings_in_a_fresh_process(**env) -> str:
    import os
    import subprocess
    import sys

    code = "from django.conf import settings; print(settings.DYNABENCH_ONNX_INT8_PLANS)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "dynabench.settings", "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )
    return (result.stdout + result.stderr).strip().splitlines()[-1]


@pytest.mark.parametrize(
    "env, last_line",
    [
        ({"DYNABENCH_ONNX_INT8_PLANS": " all , ffn-fp32,"}, "['all', 'ffn-fp32']"),
        ({"DYNABENCH_ONNX_INT8_PLANS": ""}, "['all', 'ffn-output-fp32', 'ffn-fp32']"),
        (
            {"DYNABENCH_ONNX_INT8_PLANS": "ALL,ffn_fp32"},
            "django.core.exceptions.ImproperlyConfigured: DYNABENCH_ONNX_INT8_PLANS names 'ALL', "
            "'ffn_fp32': expected a comma-separated choice of all, ffn-output-fp32, ffn-fp32 (tried "
            "fastest first, in that order)",
        ),
        (
            {"DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP": "0.5"},
            "django.core.exceptions.ImproperlyConfigured: DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP=0.5: "
            "expected a fraction from 0 to 0.1 (0.005 is half a point of accuracy)",
        ),
        (
            {"DYNABENCH_ONNX_INT8_MIN_AGREEMENT": "99.5"},
            "django.core.exceptions.ImproperlyConfigured: DYNABENCH_ONNX_INT8_MIN_AGREEMENT=99.5: "
            "expected a fraction from 0 to 1",
        ),
    ],
)
def test_the_int8_settings_are_read_leniently_and_checked(env, last_line):
    assert _settings_in_a_fresh_process(**env) == last_line


def test_a_drop_just_over_the_limit_is_not_printed_as_the_limit():
    from engine.runtime.onnx_export import choose

    check = {"rule": "accuracy", "accuracy_drop": 2 / 399, "n": 399, "passed": False}
    _, message = choose(ONNX_INT8, {ONNX_FP32: {"passed": True}, ONNX_INT8: check})
    assert message.startswith("int8 weights lost 0.501 points of accuracy against PyTorch on 399 ")
    check["accuracy_drop"] = 0.012
    assert "lost 1.2 points" in choose(ONNX_INT8, {ONNX_FP32: {"passed": True}, ONNX_INT8: check})[1]


@pytest.mark.parametrize(
    "drop, text",
    [
        (0.012, "1.2"),
        (2 / 399, "0.501"),
        (0.005, "0.5"),
        (-0.01, "1.0"),
        (0.0004, "0.04"),
        (0.0, "0.0"),
        (-0.0075, "0.75"),  # 3 of 400: the accuracies beside it (two decimals) differ by 0.75
        (0.00001, "0.001"),
    ],
)
def test_drop_points_by_hand(drop, text):
    from engine.runtime.int8_plans import drop_points

    assert drop_points(drop, 0.005) == text


@pytest.mark.django_db
def test_the_page_tells_a_drop_just_over_the_limit_from_one_at_it(client, make_model):
    tried = [
        {"plan": "all", "passed": False, "accuracy_drop": 2 / 399},
        {"plan": "ffn-output-fp32", "passed": True, "accuracy_drop": 0.0},
        {"plan": "ffn-fp32", "passed": True, "accuracy_drop": -0.0004},
    ]
    int8 = {
        "n": 399,
        "label_agreement": 0.99,
        "passed": True,
        "plan": "ffn-output-fp32",
        "plans_tried": tried,
    }
    model = make_model("planned", runtime=ONNX_INT8, card={"runtime": {"checks": {ONNX_INT8: int8}}})
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    assert (
        "int8 plans tried, fastest first (each may lose at most 0.5 points): every MatMul in int8: lost "
        "0.501 points, failed; feed-forward output MatMuls in fp32: no change, passed; feed-forward "
        "MatMuls in fp32: gained 0.04 points, passed." in page
    )


@pytest.mark.django_db
def test_the_plans_tried_are_worded_once_for_the_page_and_the_logs(make_model):
    from models_registry.runtime_facts import int8_plans_tried

    tried = [{"plan": "all", "passed": False, "answer_agreement": 0.82}, {"plan": "ffn-fp32", "passed": True}]
    int8 = {"n": 400, "answer_agreement": 0.995, "passed": True, "plan": "ffn-fp32", "plans_tried": tried}
    model = make_model("planned", runtime=ONNX_INT8, card={"runtime": {"checks": {ONNX_INT8: int8}}})
    assert int8_plans_tried(model) == [
        "every MatMul in int8: 82.0% the same, failed",
        "feed-forward MatMuls in fp32: –, passed",
    ]
    assert int8_plans_tried(make_model("unchecked")) == []


def _digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.django_db
def test_checking_again_serves_the_judged_graphs_until_the_new_ones_are_chosen(
    hate_task, tiny_model_dir, monkeypatch, settings
):
    settings.DYNABENCH_ONNX_INT8_MIN_AGREEMENT = 0.0
    _failing_plans(monkeypatch, tiny_model_dir, failing={"all"})
    model = register_local_model(task=hate_task, name="planned", path=str(tiny_model_dir), card={})
    assert model.card["runtime"]["checks"][ONNX_INT8]["plan"] == "ffn-output-fp32"
    served = {runtime: _digest(onnx_file(tiny_model_dir, runtime)) for runtime in (ONNX_FP32, ONNX_INT8)}
    seen_while_judging: list[dict] = []
    real_judge = onnx_export.judge  # the fake above: "all" fails

    def judge(runtime, check, targets, reference, outputs):
        # What a live request would load now: the graphs on disk in the model's own folder.
        seen_while_judging.append({r: _digest(onnx_file(tiny_model_dir, r)) for r in served})
        return real_judge(runtime, check, targets, reference, outputs)

    monkeypatch.setattr(onnx_export, "judge", judge)
    texts = ["a probe sentence", "another one", "a third"]
    report = onnx_export.export_and_check(tiny_model_dir, texts)
    # fp32, then int8 with "all" (failed), then int8 with "ffn-output-fp32": none of them was served
    # before it was chosen.
    assert seen_while_judging == [served] * 3
    assert report.checks[ONNX_INT8]["plan"] == "ffn-output-fp32"
    # Chosen: the new graphs are in place, with their check inputs, and nothing is left beside them.
    assert len(_weight_matmuls(onnx_file(tiny_model_dir, ONNX_INT8))) == LAYERS
    assert onnx_export.saved_check_inputs(tiny_model_dir) == (texts, None)
    assert [p.name for p in tiny_model_dir.iterdir() if "onnx" in p.name] == ["onnx"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "recheck, note",
    [
        ("queued", "Check again queued: it serves as below until the check ends."),
        ("running", "Being checked again: it serves as below until the check ends."),
        ("", None),
    ],
)
def test_the_model_page_says_when_a_check_again_is_on_its_way(client, make_model, recheck, note):
    model = make_model("rechecked", runtime=ONNX_INT8, recheck=recheck)
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    notes = re.findall(r'<p class="muted runtime-recheck">(.*?)</p>', page)
    assert notes == ([note] if note else [])


@pytest.mark.django_db
def test_the_leaderboard_badge_names_the_int8_plan_served(client, hate_task, make_model):
    from leaderboards.models import Dataset, DatasetItem

    dataset = Dataset.objects.create(
        task=hate_task, slug="board", name="board", access=Dataset.Access.SCORING
    )
    DatasetItem.objects.create(dataset=dataset, external_id="a", inputs={"statement": "x"}, target="hateful")
    int8 = {"n": 300, "label_agreement": 0.99, "passed": True, "plan": "ffn-output-fp32"}
    make_model("planned", runtime=ONNX_INT8, card={"runtime": {"checks": {ONNX_INT8: int8}}})
    make_model("on-fp32", runtime=ONNX_FP32, card={"runtime": {"checks": {ONNX_INT8: int8}}})
    page = client.get(f"/tasks/{hate_task.slug}/leaderboard/").content.decode()
    titles = dict(re.findall(r'data-runtime="([^"]+)" href="[^"]*" title="([^"]*)"', page))
    assert titles == {
        ONNX_INT8: "Runtime it is served and measured with: ONNX Runtime, int8 weights (feed-forward "
        "output MatMuls in fp32)",
        # An int8 plan that is not served is not the system's.
        ONNX_FP32: "Runtime it is served and measured with: ONNX Runtime, fp32",
    }


def test_an_export_clears_what_a_killed_export_left_behind(tiny_model_dir):
    import os
    import time

    stale = tiny_model_dir / ".onnx-export-deadbeef"
    (stale / "sub").mkdir(parents=True)
    (stale / "model.fp32.onnx").write_bytes(b"x" * 10)
    day_ago = time.time() - 25 * 3600
    os.utime(stale, (day_ago, day_ago))
    recent = tiny_model_dir / ".onnx-export-0badcafe"  # another export may still be writing it
    recent.mkdir()
    onnx_export.export_and_check(tiny_model_dir, ["a probe sentence"])
    assert not stale.exists() and recent.exists()


@pytest.mark.django_db
def test_one_plan_tried_still_states_the_loss_allowed_and_a_zero_difference_is_short(client, make_model):
    int8 = {
        "n": 399,
        "label_agreement": 0.99,
        "max_probability_difference": 0.0123,
        "passed": True,
        "plan": "all",
        "plans_tried": [{"plan": "all", "passed": True, "accuracy_drop": 0.005}],
    }
    fp32 = {"n": 399, "label_agreement": 1.0, "max_probability_difference": 0.0, "passed": True}
    model = make_model(
        "one-plan", runtime=ONNX_INT8, card={"runtime": {"checks": {ONNX_FP32: fp32, ONNX_INT8: int8}}}
    )
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    assert re.findall(r'<p class="muted runtime-plans">(.*?)</p>', page) == [
        "int8 plans tried, fastest first (each may lose at most 0.5 points): every MatMul in int8: lost "
        "0.5 points, passed."
    ]
    # fp32's difference rounds to 0 at 6 decimals; on a phone the table has no room for words.
    assert '<td class="num">&lt; 0.000001</td>' in page


def test_an_export_that_cannot_be_put_in_place_falls_back_to_torch(tiny_model_dir, monkeypatch):
    import errno

    onnx_export.export_onnx(tiny_model_dir, get_classifier(tiny_model_dir))

    def no_room(new_dir, final_dir):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(onnx_export, "swap_into_place", no_room)
    report = onnx_export.export_and_check(tiny_model_dir, ["a probe sentence"])
    assert report.runtime == "torch"
    assert report.message == (
        "could not export to ONNX: OSError: No space left on device; serving with PyTorch"
    )
    assert not (tiny_model_dir / "onnx").exists()  # no graph of other weights stays beside these
    with pytest.raises(onnx_export.ExportError, match="No space left on device"):
        onnx_export.export_onnx(tiny_model_dir, get_classifier(tiny_model_dir))
    assert [p.name for p in tiny_model_dir.iterdir() if "onnx" in p.name] == []


@pytest.mark.django_db
def test_the_accuracies_beside_a_plan_add_up_to_the_change_it_states(client, make_model):
    """261 and 258 right of 400: the check table says 65.25% and 64.50%, the plans line 0.75 points."""
    tried = [{"plan": "all", "passed": True, "accuracy_drop": -0.0075}]
    int8 = {
        "n": 400,
        "rule": "accuracy",
        "accuracy": 261 / 400,
        "torch_accuracy": 258 / 400,
        "accuracy_drop": -0.0075,
        "passed": True,
        "plan": "all",
        "plans_tried": tried,
    }
    model = make_model("rounded", runtime=ONNX_INT8, card={"runtime": {"checks": {ONNX_INT8: int8}}})
    page = client.get(reverse("leaderboards:model", args=[model.pk])).content.decode()
    assert '<small class="muted">accuracy 65.25% (PyTorch 64.50%)</small>' in page
    assert "every MatMul in int8: gained 0.75 points, passed" in page
