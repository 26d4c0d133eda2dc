"""Latency of submitting an example through the create page vs the bare model forward.

Run:  .venv/bin/python benchmarks/create_latency.py [--n 200] [--runtime onnx-int8] [--floor]
          [--breakdown] [--database-url URL]

Prints p50 and p95 (milliseconds) over the same statements (HatemojiBuild test split, from
``DYNABENCH_DATA_DIR``) of:
  * page:          POST to /tasks/hate-speech/create/ through Django's full request stack (middleware,
                   session auth, CSRF, form, create service, the model forward on the runtime its
                   registration chose, PostgreSQL insert, redirect);
  * torch forward: ``Classifier.predict_batch([statement])`` on PyTorch alone, in the same process;
  * onnx forward:  the same on the registered ONNX runtime (when the export was chosen), with the
                   vector cache off (the page has just encoded the same statement);
  * floor (``--floor``): a logged-in POST of the same body to a view that only reads it, writes the
                   session and redirects, through the same middleware: what any annotator's page costs
                   on this stack before its own work (``floor_view_installed``);
then the overhead p50(page) - p50(forward of the page's runtime) and the ratio p50(page) / p50(torch
forward). The model is all-MiniLM-L6-v2 with a head trained for a few steps on the benchmark's own
statements (so its int8 check sees confident labels, as with a real target); its forward costs what
any MiniLM target's costs. A throwaway test database is created and dropped.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.minilm_model import register_fitted_minilm  # noqa: E402
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


BREAKDOWN_N = 100


def print_breakdown(submit, texts: list[str]) -> None:
    """Print the p50 of each part of a submission over ``texts``: the statements' time on the database
    (psycopg's execute, from Django's ``execute_wrapper``), the model call (``inference.predict``) and the
    rest (Django's stack, the ORM's SQL compiling, transactions' commits, forms, sessions). ``texts``
    must not have been submitted before, or the vector cache answers the model call."""
    from django.db import connection

    from models_registry import inference

    spent = {"sql": 0.0, "model": 0.0}

    by_statement: dict[str, list[float]] = {}

    def timed_sql(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            took = time.perf_counter() - start
            spent["sql"] += took
            by_statement.setdefault(" ".join(sql.split()[:4])[:60], []).append(took * 1000)

    real_predict = inference.predict

    def timed_predict(model, inputs):
        start = time.perf_counter()
        try:
            return real_predict(model, inputs)
        finally:
            spent["model"] += time.perf_counter() - start

    parts: dict[str, list[float]] = {"page": [], "sql": [], "model": [], "rest": []}
    inference.predict = timed_predict
    try:
        with connection.execute_wrapper(timed_sql):
            for text in texts:
                spent.update(sql=0.0, model=0.0)
                page = submit(text)
                parts["page"].append(page)
                parts["sql"].append(spent["sql"] * 1000)
                parts["model"].append(spent["model"] * 1000)
                parts["rest"].append(page - (spent["sql"] + spent["model"]) * 1000)
    finally:
        inference.predict = real_predict
    print(
        f"breakdown of {len(texts)} more submissions (p50 ms of each part; the parts' p50s need not add up):"
    )
    for name, values in parts.items():
        print(f"  {name:8}{percentile(values, 50):8.1f}")
    print("statements (p50 ms, count per submission):")
    for key, values in sorted(by_statement.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {percentile(values, 50):6.2f} {len(values) / len(texts):4.1f}  {key}")


FLOOR_URL = "/benchmark-floor/"


@contextlib.contextmanager
def floor_view_installed():
    """Serve ``FLOOR_URL`` beside the platform's URLs (one URLconf for the whole run, so no request pays
    for rebuilding the resolver): a view that does only what every page of an annotator does, through the
    same middleware (session, CSRF, authentication, messages, audit log, framing): ``login_required``
    (the session's and the user's rows), the form body read, one session write (the create page keeps
    its examples' ids there) and a redirect. It is the floor under the create page on this stack: the
    create page's own work (form, qualification, targets, model call, inserts) comes on top of it."""
    import types

    from django.conf import settings
    from django.contrib.auth.decorators import login_required
    from django.shortcuts import redirect
    from django.urls import clear_url_caches, include, path

    @login_required
    def floor(request):
        request.POST.get("statement")
        request.session["benchmark.floor"] = request.session.get("benchmark.floor", 0) + 1
        return redirect("/")

    urls = types.ModuleType("benchmark_floor_urls")
    urls.urlpatterns = [path(FLOOR_URL.strip("/") + "/", floor), path("", include(settings.ROOT_URLCONF))]
    sys.modules[urls.__name__] = urls
    real, settings.ROOT_URLCONF = settings.ROOT_URLCONF, urls.__name__
    clear_url_caches()
    try:
        yield
    finally:
        settings.ROOT_URLCONF = real
        clear_url_caches()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200, help="statements to submit (default 200)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument(
        "--profile", type=int, default=0, help="after the run, profile this many more submissions (cProfile)"
    )
    parser.add_argument(
        "--runtime",
        default="onnx-int8",
        help="DYNABENCH_MODEL_RUNTIME for the registration (default onnx-int8)",
    )
    parser.add_argument(
        "--queries", action="store_true", help="after the run, print the SQL of one more submission"
    )
    parser.add_argument(
        "--profile-file", default="", help="also write the cProfile stats there (for pstats or snakeviz)"
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help=f"after the run, split {BREAKDOWN_N} more submissions into SQL, model call and the rest (p50 ms)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time, interleaved, a logged-in POST to a view that only writes the session and redirects",
    )
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_bench")
    args = parser.parse_args()

    def go() -> None:
        from django.conf import settings
        from django.test import Client

        settings.DYNABENCH_MODEL_RUNTIME = args.runtime
        run(args, settings, Client)

    run_on_throwaway_database(args.database_url, go)


def run(args, settings, Client) -> None:
    import torch
    from django.contrib.auth import get_user_model

    from annotation.models import Example
    from engine.runtime import vector_cache
    from engine.runtime.classifier import get_classifier
    from models_registry.round_targets import set_round_targets
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    # The breakdown submits statements of its own: the vector cache would answer the ones seen before.
    extra = BREAKDOWN_N if args.breakdown else 0
    statements = load_statements(Path(settings.DYNABENCH_DATA_DIR), args.n + args.warmup + extra)
    statements, fresh = statements[: len(statements) - extra], statements[len(statements) - extra :]
    task = ensure_builtin_task("hate-speech")
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)

    model_dir = Path(tempfile.mkdtemp(prefix="bench-model-"))
    model = register_fitted_minilm(task, "bench-minilm", model_dir, Path(settings.DYNABENCH_DATA_DIR))
    set_round_targets(round=round_, models=[model])
    classifier = get_classifier(model_dir)
    onnx = get_classifier(model_dir, runtime=model.runtime) if model.runtime != "torch" else None
    check = model.card.get("runtime", {})

    user = get_user_model().objects.create_user("bench-annotator", password="bench-password-123")
    client = Client()
    client.force_login(user)
    url = f"/tasks/{task.slug}/create/"

    def submit(text: str, to: str = url) -> float:
        data = {"statement": text, "label": "hateful", "client_token": str(uuid.uuid4()), "started": ""}
        start = time.perf_counter()
        response = client.post(to, data)
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code != 302:
            raise SystemExit(f"{to} answered {response.status_code}, expected a redirect")
        return elapsed

    def forward(predictor, text: str) -> float:
        # Uncached: the page has just encoded this statement, so the vector cache would answer the ONNX
        # forward from memory (about 1.2 ms instead of 6-7 ms) and the bare forward would not be one.
        with vector_cache.uncached():
            start = time.perf_counter()
            predictor.predict_batch([text])
            return (time.perf_counter() - start) * 1000

    warm, measured = statements[: args.warmup], statements[args.warmup :]
    for text in warm:
        submit(text)
        forward(classifier, text)
        if onnx is not None:
            forward(onnx, text)
    # Interleave them so that all see the same machine state (caches, other load).
    page_ms, torch_ms, onnx_ms, floor_ms = [], [], [], []
    with floor_view_installed() if args.floor else contextlib.nullcontext():
        for text in warm if args.floor else []:
            submit(text, FLOOR_URL)
        for text in measured:
            page_ms.append(submit(text))
            torch_ms.append(forward(classifier, text))
            if onnx is not None:
                onnx_ms.append(forward(onnx, text))
            if args.floor:
                floor_ms.append(submit(text, FLOOR_URL))
    stored = Example.objects.filter(round=round_).count()

    print(f"statements: {len(measured)} (after {len(warm)} warm-up), examples stored: {stored}")
    print(f"torch threads: {torch.get_num_threads()}, database: {settings.DATABASES['default']['ENGINE']}")
    print(f"runtime asked for: {args.runtime}; registered with: {model.runtime} {check.get('message') or ''}")
    for runtime, result in (check.get("checks") or {}).items():
        print(f"  export check {runtime}: {result}")
    print(f"{'':16}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
    rows = [("page", page_ms), ("torch forward", torch_ms)] + ([("onnx forward", onnx_ms)] if onnx_ms else [])
    rows += [("floor", floor_ms)] if floor_ms else []
    for name, values in rows:
        p50, p95 = percentile(values, 50), percentile(values, 95)
        print(f"{name:16}{p50:10.1f}{p95:10.1f}{statistics.fmean(values):10.1f}")
    served = onnx_ms or torch_ms
    overhead = percentile(page_ms, 50) - percentile(served, 50)
    print(
        f"platform overhead at p50 (page - forward of {model.runtime}): {overhead:.1f} ms (aim: at most 5 ms)"
    )
    ratio = percentile(page_ms, 50) / percentile(torch_ms, 50)
    print(f"whole page p50 / bare torch forward p50: {ratio:.2f} (aim: below 1.0 on the ONNX path)")
    if floor_ms:
        floor = percentile(floor_ms, 50)
        print(
            f"floor (a logged-in POST that only writes the session and redirects) p50 {floor:.1f} ms; "
            f"the create page's own work above it: {percentile(page_ms, 50) - floor:.1f} ms, of which the "
            f"forward {percentile(served, 50):.1f}"
        )
    if args.queries:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            submit(measured[0])
        print(f"queries of one submission: {len(captured.captured_queries)}")
        for query in captured.captured_queries:
            print(f"  {query['time']:>6} s  {query['sql'][:300]}")
    if args.breakdown:
        print_breakdown(submit, fresh)
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for text in (measured * (args.profile // max(1, len(measured)) + 1))[: args.profile]:
            submit(text)
        profiler.disable()
        if args.profile_file:
            profiler.dump_stats(args.profile_file)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)


if __name__ == "__main__":
    main()
