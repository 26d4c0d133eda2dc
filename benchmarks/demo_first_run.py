"""The demo's first run, per phase: what ``make demo`` does on an empty database and model folder.

Run:  .venv/bin/python benchmarks/demo_first_run.py [--tasks SLUG ...] [--var-dir DIR]
          [--database-url URL] [--log FILE]

A throwaway PostgreSQL test database is created (``benchmarks.throwaway_database``) and dropped at the
end; the models, static files and demo password go to ``--var-dir`` (default a new temporary folder,
removed at the end; ``DYNABENCH_VAR_DIR`` and ``DYNABENCH_MODEL_DIR`` point there). The real data is
read from ``DYNABENCH_DATA_DIR`` (default ``../shared/data``). Then, in ``scripts/demo.sh``'s order:

1. ``migrate`` (here: creating the test database, which runs every migration) and ``collectstatic``;
2. ``setup_demo --tasks hate-speech --skip-evaluations``: the hate-speech task is imported, its targets
   trained and its rounds laid out; the server could serve from here on ("serving after");
3. ``setup_demo --worker-running``: the hate-speech evaluations, then sentiment, NLI and QA (each
   imported, trained, laid out, its round datasets built and every model evaluated on every scoring and
   standard dataset), then the accounts and schedules ("all tasks ready").

demo.sh runs step 3 in the background next to the server and a job worker, which also takes evaluation
jobs; here one process does it all, one step after the other (no worker, so nothing is waited for).

Printed: seconds per phase (migrate, collectstatic, per task its data import, each target's training
split into its fit, round-dataset build and registration check, the round datasets, the evaluations,
each pair's time with its share spent on the extra throughput passes, the working-memory measure and the
perturbed copies), the embedding cache's hits and misses per training, the ONNX vector cache's hits and
misses (``engine.runtime.vector_cache``), the total, "serving after" and
"all tasks ready". Every progress line of the set-up is written with its time stamp to ``--log``.
About 15-30 minutes on 2 cores: the figures depend on what else runs on the machine (say so with them).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.throwaway_database import run_on_throwaway_database  # noqa: E402


class Clock:
    """Phase timings: ``spans`` maps a phase to its seconds, in the order first seen."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.spans: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.lines: list[str] = []

    def add(self, phase: str, seconds: float) -> None:
        self.spans[phase] += seconds
        self.counts[phase] += 1

    def timed(self, phase: str | Callable[..., str], func: Callable) -> Callable:
        """``func`` wrapped so that each call adds its seconds to ``phase`` (or ``phase(*args, **kw)``)."""

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                name = phase(*args, **kwargs) if callable(phase) else phase
                self.add(name, time.perf_counter() - started)

        return wrapper

    def log(self, message: str) -> None:
        line = f"[{time.perf_counter() - self.started:8.1f}s] {message}"
        self.lines.append(line)
        print(line, flush=True)


def instrument(clock: Clock) -> dict:
    """Wrap the demo's steps with timers (module attributes replaced for this process only)."""
    import cycle.training.classifier as classifier
    import cycle.training.span as span
    import demo.demo_tasks.base as base
    import demo.setup as demo
    import leaderboards.evaluation as evaluation
    from demo.demo_tasks import DEMO_TASK_MODULES
    from engine.runtime.embeddings import EMBEDDING_CACHE

    current = {"task": "", "cache": []}

    for path in DEMO_TASK_MODULES:
        module = sys.modules.get(path) or __import__(path, fromlist=["DEMO_TASK"])
        slug = module.DEMO_TASK.slug
        module.call_command = clock.timed(f"{slug}: data import", module.call_command)

    lay_out = base.lay_out_task

    def lay_out_task(spec, **kwargs):
        current["task"] = spec.slug
        started = time.perf_counter()
        try:
            return lay_out(spec, **kwargs)
        finally:
            clock.add(f"{spec.slug}: import, train, lay out (all)", time.perf_counter() - started)

    demo.lay_out_task = lay_out_task

    train = base.train_target_for_rounds

    def train_target(**kwargs):
        hits, misses = EMBEDDING_CACHE.hits, EMBEDDING_CACHE.misses
        started = time.perf_counter()
        try:
            return train(**kwargs)
        finally:
            clock.add(f"{current['task']}: train {kwargs['name']}", time.perf_counter() - started)
            current["cache"].append(
                (
                    f"{current['task']}/{kwargs['name']}",
                    EMBEDDING_CACHE.hits - hits,
                    EMBEDDING_CACHE.misses - misses,
                )
            )

    base.train_target_for_rounds = train_target
    for module in (classifier, span):
        module.train_into_place = clock.timed(
            lambda *a, **k: f"{current['task']}:   of which fit and save", module.train_into_place
        )
        module.build_round_datasets = clock.timed(
            lambda *a, **k: f"{current['task']}:   of which round datasets", module.build_round_datasets
        )
        module.register_trained_target = clock.timed(
            lambda *a, **k: f"{current['task']}:   of which registration check",
            module.register_trained_target,
        )

    demo.build_round_datasets = clock.timed(
        lambda *a, **k: f"{current['task']}: round datasets", demo.build_round_datasets
    )

    def evaluate_demo_phase(task, *args, **kwargs):
        return f"{task.slug}: evaluations (all)"

    demo.evaluate_demo = clock.timed(evaluate_demo_phase, demo.evaluate_demo)

    def eval_phase(score_id, *args, **kwargs):
        from leaderboards.models import Score

        score = Score.objects.select_related("model", "dataset").get(pk=score_id)
        return f"{score.dataset.task.slug}: evaluate {score.model.name} on {score.dataset.slug}"

    demo.run_evaluation_job = clock.timed(eval_phase, demo.run_evaluation_job)
    evaluation.working_memory_bytes = clock.timed(
        lambda *a, **k: f"{current['task']}:   evaluations: working-memory measure",
        evaluation.working_memory_bytes,
    )
    evaluation.ensure_perturbed_dataset = clock.timed(
        lambda *a, **k: f"{current['task']}:   evaluations: perturbed copies (build or read)",
        evaluation.ensure_perturbed_dataset,
    )
    if hasattr(evaluation, "time_passes"):
        evaluation.time_passes = clock.timed(
            lambda *a, **k: f"{current['task']}:   evaluations: extra throughput passes",
            evaluation.time_passes,
        )
    for name in ("ensure_demo_users", "demo_password", "ensure_registered_schedules"):
        setattr(demo, name, clock.timed("accounts and schedules", getattr(demo, name)))
    return current


def run(args) -> None:
    from django.core.management import call_command

    clock = args.clock
    clock.add("migrate (test database with every migration)", time.perf_counter() - clock.started)
    started = time.perf_counter()
    call_command("collectstatic", interactive=False, verbosity=0)
    clock.add("collectstatic", time.perf_counter() - started)
    current = instrument(clock)

    import demo.setup as demo

    tasks = args.tasks or [spec.slug for spec in demo.demo_tasks()]
    first, rest = tasks[:1], tasks[1:]
    started = time.perf_counter()
    demo.setup_demo(tasks=first, log=clock.log, evaluate=False)
    serving_after = time.perf_counter() - clock.started
    clock.add("foreground setup_demo (first task, no evaluations)", time.perf_counter() - started)
    started = time.perf_counter()
    report = demo.setup_demo(tasks=first + rest, log=clock.log, worker_running=True)
    clock.add(
        "background setup_demo (evaluations of the first task, the other tasks)",
        time.perf_counter() - started,
    )
    total = time.perf_counter() - clock.started
    if args.log:
        Path(args.log).write_text("\n".join(clock.lines) + "\n", encoding="utf-8")

    print("\n--- phases (seconds; indented lines are parts of the line above) ---")
    for phase, seconds in clock.spans.items():
        n = clock.counts[phase]
        print(f"{seconds:8.1f}  {phase}" + (f"  ({n} calls)" if n > 1 else ""))
    print("\n--- embedding cache per training (vectors: hits, misses) ---")
    for name, hits, misses in current["cache"]:
        print(f"  {name}: {hits} hits, {misses} misses")
    from engine.runtime import vector_cache

    shared = vector_cache.stats()
    print(
        f"\n--- ONNX vector cache (rows shared by byte-identical graphs) ---\n  {shared['hits']} hits, "
        f"{shared['misses']} misses, {shared['entries']} rows kept, {shared['bytes'] / 2**20:.1f} MiB"
    )
    print_runtimes()
    evaluated = sum(1 for p in clock.spans if ": evaluate " in p)
    eval_seconds = sum(s for p, s in clock.spans.items() if ": evaluate " in p)
    train_seconds = sum(s for p, s in clock.spans.items() if ": train " in p)
    import_seconds = sum(s for p, s in clock.spans.items() if p.endswith(": data import"))
    print("\n--- summary ---")
    print(f"data import           {import_seconds:8.1f} s")
    print(f"training ({len(current['cache'])} targets) {train_seconds:8.1f} s")
    print(f"evaluations ({evaluated} pairs) {eval_seconds:8.1f} s")
    print(f"evaluation failures   {len(report.evaluation_failures)}")
    print(
        f"serving after         {serving_after:8.1f} s  (migrate, collectstatic, {first[0]} set up, as demo.sh)"
    )
    first_evals = sum(s for p, s in clock.spans.items() if p == f"{first[0]}: evaluations (all)")
    print(
        f"  with {first[0]}'s evaluations before serving (the order before): {serving_after + first_evals:8.1f} s"
    )
    print(f"all tasks ready       {total:8.1f} s  ({total / 60:.1f} min, one process, no worker)")


def print_runtimes() -> None:
    """Each model's runtime and each int8 plan tried with the figure it was judged on, worded as on the
    model page (``runtime_facts.int8_plans_tried``)."""
    from models_registry.models import RegisteredModel
    from models_registry.runtime_facts import int8_plans_tried

    print("\n--- runtimes (int8 plans tried, fastest first) ---")
    for model in RegisteredModel.objects.order_by("task__slug", "name"):
        int8 = ((model.card or {}).get("runtime") or {}).get("checks", {}).get("onnx-int8") or {}
        tried = "; ".join(int8_plans_tried(model))
        print(
            f"  {model.task.slug}/{model.name}: {model.runtime}; n={int8.get('n', '-')}; {tried or 'no int8 check'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", default=None, help="demo task slugs (default all, demo order)")
    parser.add_argument(
        "--var-dir", default=None, help="models and static files (default: a temporary folder)"
    )
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dyn_demo_run")
    parser.add_argument("--log", default=None, help="write the time-stamped progress lines here")
    args = parser.parse_args()
    var_dir = Path(args.var_dir) if args.var_dir else Path(tempfile.mkdtemp(prefix="demo-first-run-"))
    var_dir.mkdir(parents=True, exist_ok=True)
    args.clock = Clock()
    try:
        run_on_throwaway_database(
            args.database_url,
            lambda: run(args),
            DYNABENCH_VAR_DIR=str(var_dir),
            DYNABENCH_MODEL_DIR=str(var_dir / "models"),
            DYNABENCH_STATIC_ROOT=str(var_dir / "staticfiles"),
            DYNABENCH_JOBS_SYNC="0",
            TRANSFORMERS_OFFLINE="1",
        )
    finally:
        if not args.var_dir:
            shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
