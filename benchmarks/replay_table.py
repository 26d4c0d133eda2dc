"""How often each round's target is fooled by each round's real examples (replayed through the service).

Run:  .venv/bin/python benchmarks/replay_table.py [--database-url URL] [--recipe quick]

Procedure (all in a throwaway test database, created and dropped; models in a temporary folder):
  1. Import HatemojiBuild (``DYNABENCH_DATA_DIR/hatemoji_build``) as hate-speech rounds 1-3 (its source
     rounds 5, 6, 7), exactly as ``import_hate_data`` does.
  2. Train the demo's three targets with the quick recipe (``train_target_for_rounds``, as
     ``train_target_model`` does): minilm-quick-r1 (round 1's training split), -r1-2, -r1-2-3.
  3. For each target, open a fresh round whose only target it is, and replay into it, with
     ``leaderboards.training.replay.replay_file`` (the ``replay_round`` command's service, which calls
     ``create_example`` as the create page does), the examples of source round 5 and 6 from the test
     split (test.csv) and of source round 7 from the dev split (validation.csv: the shared copy holds no
     round-7 test rows). Training used only the train splits; the quick recipe chose its regularisation
     on the dev splits of its training rounds, so the r1-2-3 target has seen round 3's dev split for
     model selection (not for fitting).
  4. Print the markdown table: fooling rate (MER of the replayed examples) and n per cell.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.throwaway_database import run_on_throwaway_database  # noqa: E402

#: platform round -> (HatemojiBuild source round, file, split) of the examples replayed against targets.
EXAMPLE_SETS: dict[int, tuple[int, str, str]] = {
    1: (5, "test.csv", "test"),
    2: (6, "test.csv", "test"),
    3: (7, "validation.csv", "dev"),
}
#: target name suffix -> the rounds it is trained on.
TARGETS: dict[str, tuple[int, ...]] = {"r1": (1,), "r1-2": (1, 2), "r1-2-3": (1, 2, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_replay")
    parser.add_argument("--recipe", default="quick", choices=("quick", "finetune"))
    parser.add_argument("--limit", type=int, default=None, help="rows per cell (default: all)")
    args = parser.parse_args()

    model_dir = tempfile.mkdtemp(prefix="replay-models-")
    run_on_throwaway_database(args.database_url, lambda: run(args), DYNABENCH_MODEL_DIR=model_dir)


def run(args) -> None:
    from django.conf import settings

    from annotation.importers import import_hatemoji_build
    from leaderboards.training.replay import replay_file
    from leaderboards.training.targets import train_target_for_rounds
    from models_registry.round_targets import set_round_targets
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    data_dir = Path(settings.DYNABENCH_DATA_DIR) / "hatemoji_build"
    task = ensure_builtin_task("hate-speech")
    report = import_hatemoji_build(task=task, data_dir=data_dir)
    print(f"imported: {report.created} examples, skipped {report.skipped_count}", file=sys.stderr)

    results: dict[str, dict[int, tuple[int, int]]] = {}
    cards: dict[str, dict] = {}
    for i, (suffix, rounds) in enumerate(TARGETS.items()):
        name = f"minilm-{args.recipe}-{suffix}"
        started = time.monotonic()
        model = train_target_for_rounds(
            task=task, rounds=list(rounds), recipe=args.recipe, name=name, eval_datasets=()
        )
        print(f"trained {name} in {time.monotonic() - started:.0f}s", file=sys.stderr)
        cards[name] = model.card
        replay_round = ensure_round(task=task, number=10 + i, description=f"replay against {name}")
        set_round_targets(round=replay_round, models=[model])
        set_current_round(task=task, round_=replay_round)
        task.refresh_from_db()
        results[name] = {}
        for platform_round, (source_round, file_name, split) in EXAMPLE_SETS.items():
            started = time.monotonic()
            outcome = replay_file(
                task=task,
                round_number=replay_round.number,
                path=data_dir / file_name,
                source_rounds=[source_round],
                splits=[split],
                limit=args.limit,
            )
            results[name][platform_round] = (outcome.fooled, outcome.scored)
            print(
                f"  {name} vs round {platform_round}: {outcome.fooled}/{outcome.scored} "
                f"({time.monotonic() - started:.0f}s; skipped {len(outcome.skipped)}, "
                f"rejected {len(outcome.rejected)}, not scored {outcome.not_scored})",
                file=sys.stderr,
            )

    columns = [f"round {r} examples (R{s} {split})" for r, (s, _file, split) in EXAMPLE_SETS.items()]
    print(f"| target (trained on) | {' | '.join(columns)} | dev acc. |")
    print("|---|" + "---:|" * (len(columns) + 1))
    for name, cells in results.items():
        trained_on = ", ".join(str(r) for r in cards[name]["training"]["rounds"])
        row = [f"{100 * fooled / n:.1f} % (n={n})" if n else "–" for fooled, n in cells.values()]
        dev = cards[name].get("dev_accuracy")
        dev_text = f"{dev:.3f}" if isinstance(dev, int | float) else "–"
        print(f"| {name} (rounds {trained_on}) | {' | '.join(row)} | {dev_text} |")


if __name__ == "__main__":
    main()
