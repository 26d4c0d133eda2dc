"""A task owner pins the runtime a model is served on: the service's rules, the admin actions, the pin
surviving "Check again", and the runtime filter of the API and the admin."""

from __future__ import annotations

import pytest

from engine.runtime.runtimes import ONNX_FP32, ONNX_INT8, TORCH, onnx_file
from models_registry.models import RegisteredModel
from models_registry.services import (
    ModelRegistryError,
    pinnable_runtimes,
    register_local_model,
    run_check,
    set_runtime,
)

pytestmark = [pytest.mark.onnx, pytest.mark.django_db]


def _register(task, path, name="pinned-model"):
    return register_local_model(task=task, name=name, path=str(path), card={})


@pytest.fixture
def fp32_model(hate_task, tiny_model_dir, settings):
    """Registered preferring int8 with an int8 threshold that cannot be met: served on fp32, int8's
    check failed."""
    settings.DYNABENCH_ONNX_INT8_MIN_AGREEMENT = 1.01
    model = _register(hate_task, tiny_model_dir)
    assert model.runtime == ONNX_FP32, model.card.get("runtime")
    return model


def test_only_torch_and_passed_graphs_can_be_pinned(fp32_model):
    assert pinnable_runtimes(fp32_model) == [TORCH, ONNX_FP32]
    with pytest.raises(
        ModelRegistryError,
        match=r"cannot be served on ONNX Runtime, int8 weights: its check against PyTorch did not pass",
    ):
        set_runtime(fp32_model, ONNX_INT8)
    with pytest.raises(ModelRegistryError, match="unknown runtime 'tensorrt'"):
        set_runtime(fp32_model, "tensorrt")
    fp32_model.refresh_from_db()
    assert fp32_model.runtime == ONNX_FP32 and not fp32_model.card["runtime"].get("pinned")

    onnx_file(fp32_model.path, ONNX_FP32).unlink()  # a graph gone from disk cannot be pinned
    assert pinnable_runtimes(fp32_model) == [TORCH]
    with pytest.raises(ModelRegistryError, match="fp32: its graph file is missing"):
        set_runtime(fp32_model, ONNX_FP32)


def test_pinning_torch_records_it_and_requeues_scores_of_another_runtime(
    fp32_model, django_capture_on_commit_callbacks
):
    from leaderboards.models import Dataset, DatasetItem, Score

    dataset = Dataset.objects.create(task=fp32_model.task, slug="pin-redo", name="Pin redo")
    DatasetItem.objects.create(dataset=dataset, external_id="a", inputs={"statement": "x"}, target="hateful")
    Score.objects.filter(model=fp32_model).delete()
    score = Score.objects.create(
        model=fp32_model,
        dataset=dataset,
        status=Score.Status.DONE,
        perf=0.5,
        metrics={"n": 1, "runtime": ONNX_FP32},
    )
    checks_before = fp32_model.card["runtime"]["checks"]
    with django_capture_on_commit_callbacks(execute=True):
        model = set_runtime(fp32_model, TORCH)
    stored = RegisteredModel.objects.get(pk=model.pk)
    assert stored.runtime == TORCH
    block = stored.card["runtime"]
    assert block["pinned"] is True and block["runtime"] == TORCH
    assert block["message"] == "pinned to PyTorch by a task owner"
    assert block["checks"] == checks_before  # the export's check stays on the card
    score.refresh_from_db()
    # measured on fp32: evaluated again (inline in tests) on torch
    assert score.status == Score.Status.DONE and score.metrics["runtime"] == TORCH


def test_a_model_that_is_not_ready_or_remote_cannot_be_pinned(hate_task, fp32_model):
    RegisteredModel.objects.filter(pk=fp32_model.pk).update(status=RegisteredModel.Status.CHECKING)
    with pytest.raises(ModelRegistryError, match=r"is not ready \(checking\)"):
        set_runtime(fp32_model, TORCH)
    remote = RegisteredModel.objects.create(
        task=hate_task,
        name="remote",
        source=RegisteredModel.Source.ENDPOINT,
        endpoint_url="http://127.0.0.1:9/predict",
        status=RegisteredModel.Status.READY,
    )
    assert pinnable_runtimes(remote) == []
    with pytest.raises(ModelRegistryError, match="remote endpoint"):
        set_runtime(remote, TORCH)
    weightless = RegisteredModel.objects.create(
        task=hate_task, name="weightless", path="", status=RegisteredModel.Status.READY
    )
    assert pinnable_runtimes(weightless) == []
    with pytest.raises(ModelRegistryError, match="weightless has no weights on this server"):
        set_runtime(weightless, TORCH)


def test_check_again_keeps_a_pin_that_still_passes_and_drops_one_that_does_not(fp32_model, settings):
    set_runtime(fp32_model, TORCH)
    model = RegisteredModel.objects.get(pk=fp32_model.pk)
    model.status = RegisteredModel.Status.CHECKING
    assert run_check(model)[0] == RegisteredModel.Status.READY
    model = RegisteredModel.objects.get(pk=fp32_model.pk)
    assert model.runtime == TORCH and model.card["runtime"]["pinned"] is True  # torch is always allowed
    # the check's own reason for fp32 follows the pin
    assert model.card["runtime"]["message"].startswith(
        "pinned to PyTorch by a task owner; the check alone would serve ONNX Runtime, fp32 (int8 weights "
    )

    set_runtime(model, ONNX_FP32)
    settings.DYNABENCH_ONNX_FP32_MIN_AGREEMENT = 1.01  # fp32's new check cannot pass now
    model = RegisteredModel.objects.get(pk=fp32_model.pk)
    model.status = RegisteredModel.Status.CHECKING
    assert run_check(model)[0] == RegisteredModel.Status.READY
    model = RegisteredModel.objects.get(pk=fp32_model.pk)
    assert model.runtime == TORCH and not model.card["runtime"].get("pinned")
    assert model.card["runtime"]["message"].startswith(
        "the pin to ONNX Runtime, fp32 was dropped: its check no longer passes; "
    )


def test_the_admin_actions_pin_for_task_owners_only(client, owner, password, fp32_model, django_user_model):
    url = "/admin/models_registry/registeredmodel/"
    stranger = django_user_model.objects.create_user("stranger", password=password, is_staff=True)
    client.force_login(owner)
    response = client.post(
        url, {"action": "serve_on_onnx_int8", "_selected_action": [fp32_model.pk]}, follow=True
    )
    text = response.content.decode()
    assert "Not changed: pinned-model cannot be served on ONNX Runtime, int8 weights" in text
    response = client.post(
        url, {"action": "serve_on_torch", "_selected_action": [fp32_model.pk]}, follow=True
    )
    assert (
        f"Now served on PyTorch: pinned-model ({fp32_model.task.name}). Scores measured on another runtime "
        "are queued again." in response.content.decode()
    )
    assert RegisteredModel.objects.get(pk=fp32_model.pk).runtime == TORCH
    response = client.post(
        url, {"action": "serve_on_torch", "_selected_action": [fp32_model.pk]}, follow=True
    )
    text = response.content.decode()
    assert (
        f"Pinned to PyTorch, which they were already served on (no Score to measure again): pinned-model "
        f"({fp32_model.task.name})." in text
    )
    assert "queued again" not in text

    client.force_login(stranger)
    client.post(url, {"action": "serve_on_onnx_fp32", "_selected_action": [fp32_model.pk]})
    assert RegisteredModel.objects.get(pk=fp32_model.pk).runtime == TORCH  # not the stranger's to change


def test_the_api_and_the_admin_filter_models_by_runtime(client, owner, hate_task, fp32_model, tmp_path):
    on_torch = RegisteredModel.objects.create(
        task=hate_task,
        name="torch-one",
        status=RegisteredModel.Status.READY,
        is_published=True,
        runtime=TORCH,
    )
    RegisteredModel.objects.filter(pk=fp32_model.pk).update(is_published=True)

    def names(runtime):
        return sorted(m["name"] for m in client.get(f"/api/models/?runtime={runtime}").json()["results"])

    assert names(ONNX_FP32) == ["pinned-model"]
    assert names(TORCH) == [on_torch.name]
    assert names(ONNX_INT8) == []
    bad = client.get("/api/models/?runtime=tensorrt")
    assert bad.status_code == 400 and "runtime" in bad.json()

    client.force_login(owner)
    page = client.get(f"/admin/models_registry/registeredmodel/?runtime__exact={TORCH}").content.decode()
    assert "torch-one" in page and "pinned-model" not in page


def test_the_model_page_names_a_pinned_runtime_once(client, fp32_model):
    from django.urls import reverse

    set_runtime(fp32_model, TORCH)
    page = client.get(reverse("leaderboards:model", args=[fp32_model.pk])).content.decode()
    # The label stands beside the message: "PyTorch (pinned to PyTorch by a task owner)" said it twice.
    assert (
        '<span data-runtime="torch">PyTorch</span> <span class="muted">(pinned by a task owner)</span>'
        in page
    )
    # The stored message keeps the runtime: logs and the API show it without the label beside it.
    assert RegisteredModel.objects.get(pk=fp32_model.pk).card["runtime"]["message"] == (
        "pinned to PyTorch by a task owner"
    )
