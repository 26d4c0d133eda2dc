"""What the model card says about a model's runtime, from ``card["runtime"]`` (``onnx_export``)."""

from __future__ import annotations

from engine.runtime import runtimes
from engine.runtime.int8_plans import BY_NAME as INT8_PLANS
from engine.runtime.int8_plans import drop_points
from engine.runtime.onnx_export import max_accuracy_drop
from models_registry.models import RegisteredModel

#: What serves a model whose weights run on another machine, by ``RegisteredModel.source``: no runtime
#: of ours (``RegisteredModel.runtime`` keeps its default, "torch", which says nothing about it).
REMOTE_LABELS = {
    RegisteredModel.Source.ENDPOINT: "remote endpoint",
    RegisteredModel.Source.CHAT_ENDPOINT: "remote chat server",
}


def is_remote(model: RegisteredModel) -> bool:
    """True for a model served by another machine (an inference endpoint or an OpenAI-compatible chat
    server): its memory and runtime are not ours to measure or name."""
    return model.source in REMOTE_LABELS


def runtime_key(model: RegisteredModel) -> str:
    """What serves ``model``, as a key: its source for a remote model (``endpoint``, ``chat_endpoint``),
    else its runtime (``torch``, ``onnx-fp32``, ``onnx-int8``)."""
    return str(model.source) if is_remote(model) else model.runtime


def runtime_label(model: RegisteredModel, *, short: bool = False) -> str:
    """What serves ``model``, in words: "remote endpoint" or "remote chat server" for a remote model,
    else its runtime's label (``runtimes.label``, or ``runtimes.short_label`` with ``short``: "PyTorch",
    "ONNX int8"). The one place the leaderboard's badge and the model card's runtime are chosen."""
    if is_remote(model):
        return REMOTE_LABELS[model.source]
    return runtimes.short_label(model.runtime) if short else runtimes.label(model.runtime)


def runtime_facts(model: RegisteredModel) -> dict:
    """The runtime block of a model card, ready to show.

    Returns:
        ``{"runtime": "onnx-int8", "label": "ONNX Runtime, int8 weights", "message": str (the card's;
        a pin's says "pinned by a task owner", the label standing beside it),
        "checks": [{"runtime", "label", "n", "agreement" (fraction), "agreement_text" (e.g. "99.5%"), "what" ("labels" or "answers"),
        "difference" (largest probability or score difference), "difference_text" (e.g. "0.0123" or
        "< 0.000001": the check rounds to 6 decimals), "difference_of" ("probability" or
        "score"), "passed", "plan" (the int8 graph's MatMuls kept in fp32, e.g. "feed-forward output
        MatMuls in fp32"; "" for fp32 or a check from before plans), "accuracy_text" (int8 judged on
        labelled inputs: e.g. "accuracy 56.0% (PyTorch 55.0%)", else ""), "tried" (the int8 plans
        tried, fastest first, e.g. "every MatMul in int8: lost 1.0 points, failed")}], "export_seconds":
        float | None, "max_drop_text": the accuracy an int8 plan may lose, in points, e.g. "0.5"}``;
        ``checks`` is empty for a model never
        exported (registered before the ONNX path, an endpoint, or ``DYNABENCH_MODEL_RUNTIME=torch``).
    """
    block = (model.card or {}).get("runtime")
    block = block if isinstance(block, dict) else {}
    checks = []
    for runtime in runtimes.ONNX_RUNTIMES:
        check = (block.get("checks") or {}).get(runtime)
        if not isinstance(check, dict):
            continue
        labels = "label_agreement" in check
        agreement = check.get("label_agreement" if labels else "answer_agreement")
        checks.append(
            {
                "runtime": runtime,
                "label": runtimes.label(runtime),
                "n": check.get("n"),
                "agreement": agreement,
                "agreement_text": f"{agreement:.1%}" if isinstance(agreement, int | float) else "–",
                "what": "labels" if labels else "answers",
                "difference": check.get("max_probability_difference" if labels else "max_score_difference"),
                "difference_of": "probability" if labels else "score",
                "difference_text": _difference_text(
                    check.get("max_probability_difference" if labels else "max_score_difference")
                ),
                "passed": bool(check.get("passed")),
                "plan": INT8_PLANS[check["plan"]].description if check.get("plan") in INT8_PLANS else "",
                "accuracy_text": _accuracy_text(check),
                "tried": [_tried_text(t) for t in check.get("plans_tried") or [] if isinstance(t, dict)],
            }
        )
    label = runtime_label(model)
    message = str(block.get("message") or "")
    # Shown beside the label, a pin's message need not name the runtime again.
    message = message.replace(f"pinned to {label} by a task owner", "pinned by a task owner", 1)
    return {
        "runtime": runtime_key(model),
        "label": label,
        "message": message,
        "checks": checks,
        "export_seconds": block.get("export_seconds"),
        "max_drop_text": f"{max_accuracy_drop() * 100:.1f}",
    }


def served_runtime_text(model: RegisteredModel) -> str:
    """The runtime ``model`` serves with, in full, with the int8 plan when it serves int8 (e.g. "ONNX
    Runtime, int8 weights (feed-forward output MatMuls in fp32)"); "remote endpoint" or "remote chat
    server" for a remote model (``runtime_label``)."""
    facts = runtime_facts(model)
    plan = next((c["plan"] for c in facts["checks"] if c["runtime"] == model.runtime and c["plan"]), "")
    return f"{facts['label']} ({plan})" if plan else facts["label"]


def int8_plans_tried(model: RegisteredModel) -> list[str]:
    """The int8 plans tried at ``model``'s last check, fastest first, worded as on its page (e.g.
    ``"every MatMul in int8: lost 1.0 points, failed"``); [] when it has no int8 check."""
    checks = runtime_facts(model)["checks"]
    return next((c["tried"] for c in checks if c["runtime"] == runtimes.ONNX_INT8), [])


def _accuracy_text(check: dict) -> str:
    accuracy, reference = check.get("accuracy"), check.get("torch_accuracy")
    if check.get("rule") != "accuracy" or not all(isinstance(v, int | float) for v in (accuracy, reference)):
        return ""
    # Two decimals, as the plans line gives the change (int8_plans.drop_points): 65.2% beside 64.5% read
    # as 0.7 points where the change was 0.75; on up to 400 inputs two decimals are exact.
    return f"accuracy {accuracy:.2%} (PyTorch {reference:.2%})"


def _tried_text(tried: dict) -> str:
    plan = (
        INT8_PLANS[tried["plan"]].description if tried.get("plan") in INT8_PLANS else str(tried.get("plan"))
    )
    drop = tried.get("accuracy_drop")
    if isinstance(drop, int | float):
        size = drop_points(drop, max_accuracy_drop())
        figure = "no change" if not drop else f"{'lost' if drop > 0 else 'gained'} {size} points"
    else:
        share = tried.get("label_agreement", tried.get("answer_agreement"))
        figure = f"{share:.1%} the same" if isinstance(share, int | float) else "–"
    return f"{plan}: {figure}, {'passed' if tried.get('passed') else 'failed'}"


def _difference_text(value) -> str:
    if not isinstance(value, int | float):
        return "–"
    if value == 0:
        # Stored rounded to 6 decimals (onnx_export.agreement). Short: on a phone the table has 352 px.
        return "< 0.000001"
    return f"{value:.6f}".rstrip("0").rstrip(".")
