"""How often each round's target is fooled by each round's real examples (replayed through the service),
with 95% intervals, and each target's accuracy on the rounds' test splits and HateCheck.

Run:  .venv/bin/python benchmarks/replay_table.py [--recipe quick|finetune] [--backbone minilm|mpnet]
                                                  [--natural-share 0.25] [--targets r1 r1-2-3]
(``--backbone mpnet`` needs ``make mpnet`` first; a finetune of the three mpnet targets takes about an
hour on 2 cores.)

Procedure (all in a throwaway test database, created and dropped; models in a temporary folder):
  1. Import HatemojiBuild (``DYNABENCH_DATA_DIR/hatemoji_build``) as hate-speech rounds 1-3 (its source
     rounds 5, 6, 7), exactly as ``import_hate_data`` does, and HateCheck. With ``--natural-share``, also
     the natural set ``hatemoji-build-originals`` (``import_natural_data``).
  2. Train the targets with the recipe and backbone (``train_target_for_rounds``, as
     ``train_target_model`` does): r1 (round 1's training split), r1-2, r1-2-3; with ``--natural-share``
     each training set is mixed with that share of natural texts (``cycle.training.natural``).
  3. Measure each target's accuracy on the round test datasets (``round-1-test``, ``round-2-test``, and
     both pooled) and on HateCheck (its 3,425 cases), predicting with the served classifier.
  4. For each target, open a fresh round whose only target it is, and replay into it, with
     ``cycle.training.replay.replay_file`` (the ``replay_round`` command's service, which calls
     ``create_example`` as the create page does), the examples of source round 5 and 6 from the test
     split (test.csv) and of source round 7 from the dev split (validation.csv: the shared copy holds no
     round-7 test rows). The r1-2-3 target chose its epoch or regularisation on round 3's dev split (not
     fitted on it).
  5. Print two markdown tables: the fooling rate (MER of the replayed examples) with its Wilson 95%
     interval and n per cell, then the accuracy table; and, per round's examples, whether each later
     target is fooled less than every earlier one by more than the intervals (the two intervals do
     not overlap).
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
NATURAL = "hatemoji-build-originals"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_replay")
    parser.add_argument("--recipe", default="quick", choices=("quick", "finetune"))
    parser.add_argument("--backbone", default="minilm", choices=("minilm", "mpnet"))
    parser.add_argument("--epochs", type=int, default=3, help="finetune epochs (default 3)")
    parser.add_argument(
        "--natural-share",
        type=float,
        default=0.0,
        help=f"share of each training set taken from the natural set {NATURAL} (default 0: none)",
    )
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--limit", type=int, default=None, help="rows per cell (default: all)")
    args = parser.parse_args()

    model_dir = tempfile.mkdtemp(prefix="replay-models-")
    run_on_throwaway_database(args.database_url, lambda: run(args), DYNABENCH_MODEL_DIR=model_dir)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def accuracy_on(model, dataset) -> tuple[int, int]:
    """(correct, n) of ``model``'s served classifier on ``dataset``'s items."""
    from engine.runtime.classifier import get_classifier

    rows = list(dataset.items.order_by("pk").values_list("inputs", "target"))
    texts = [inputs["statement"] for inputs, _ in rows]
    outputs = get_classifier(model.path).predict_batch(texts, batch_size=64)
    correct = sum(str(o["label"]) == target for o, (_, target) in zip(outputs, rows, strict=True))
    return correct, len(rows)


def run(args) -> None:
    from django.conf import settings

    from annotation.importers import import_hatemoji_build
    from core.intervals import wilson_interval
    from cycle.natural_sets import import_natural_set
    from cycle.training.replay import replay_file
    from cycle.training.targets import train_target_for_rounds
    from leaderboards.importers.static_sets import import_static_sets
    from leaderboards.models import Dataset
    from leaderboards.services import build_round_datasets
    from models_registry.round_targets import set_round_targets
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    data_dir = Path(settings.DYNABENCH_DATA_DIR)
    task = ensure_builtin_task("hate-speech")
    report = import_hatemoji_build(task=task, data_dir=data_dir / "hatemoji_build")
    log(f"imported: {report.created} examples, skipped {report.skipped_count}")
    import_static_sets(task=task, data_dir=data_dir)
    if args.natural_share:
        natural = import_natural_set(task=task, data_dir=data_dir)
        log(f"natural set {NATURAL}: {natural.created} texts")
    for round_ in task.rounds.order_by("number"):
        build_round_datasets(round_)
    tests = {
        "round 1 test": [Dataset.objects.get(task=task, slug="round-1-test")],
        "round 2 test": [Dataset.objects.get(task=task, slug="round-2-test")],
        "HateCheck": [Dataset.objects.get(task=task, slug="hatecheck")],
    }

    suffix = f"-nat{round(100 * args.natural_share)}" if args.natural_share else ""
    results: dict[str, dict[int, tuple[int, int]]] = {}
    accuracy: dict[str, dict[str, tuple[int, int]]] = {}
    cards: dict[str, dict] = {}
    for i, key in enumerate(args.targets):
        rounds = TARGETS[key]
        name = f"{args.backbone}-{args.recipe}-{key}{suffix}"
        started = time.monotonic()
        model = train_target_for_rounds(
            task=task,
            rounds=list(rounds),
            recipe=args.recipe,
            name=name,
            epochs=args.epochs,
            backbone=args.backbone,
            natural=NATURAL if args.natural_share else "",
            natural_share=args.natural_share,
            eval_datasets=(),
            progress=log,
        )
        log(f"trained {name} in {time.monotonic() - started:.0f}s: {model.status} {model.error_message}")
        cards[name] = model.card
        accuracy[name] = {}
        for column, datasets in tests.items():
            started = time.monotonic()
            correct, n = accuracy_on(model, datasets[0])
            accuracy[name][column] = (correct, n)
            log(f"  {name} on {column}: {correct}/{n} ({time.monotonic() - started:.0f}s)")
        r1, r2 = accuracy[name]["round 1 test"], accuracy[name]["round 2 test"]
        accuracy[name]["rounds 1-2 test"] = (r1[0] + r2[0], r1[1] + r2[1])
        accuracy[name]["HateCheck"] = accuracy[name].pop("HateCheck")

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
                path=data_dir / "hatemoji_build" / file_name,
                source_rounds=[source_round],
                splits=[split],
                limit=args.limit,
            )
            results[name][platform_round] = (outcome.fooled, outcome.scored)
            log(
                f"  {name} vs round {platform_round}: {outcome.fooled}/{outcome.scored} "
                f"({time.monotonic() - started:.0f}s; skipped {len(outcome.skipped)}, "
                f"rejected {len(outcome.rejected)}, not scored {outcome.not_scored})"
            )

    def cell(hits: int, n: int) -> str:
        if not n:
            return "–"
        low, high = wilson_interval(hits, n)
        return f"{100 * hits / n:.1f}% [{100 * low:.1f}, {100 * high:.1f}] (n={n})"

    print(f"Backbone {args.backbone}, recipe {args.recipe}, natural share {args.natural_share:g}\n")
    columns = [f"round {r} examples (R{s} {split})" for r, (s, _file, split) in EXAMPLE_SETS.items()]
    print(f"| target (trained on) | {' | '.join(columns)} |")
    print("|---|" + "---:|" * len(columns))
    for name, cells in results.items():
        trained_on = ", ".join(str(r) for r in cards[name]["training"]["rounds"])
        print(f"| {name} (rounds {trained_on}) | {' | '.join(cell(*c) for c in cells.values())} |")

    print()
    for platform_round in EXAMPLE_SETS:
        names = list(results)
        verdicts = []
        for later_index, later in enumerate(names[1:], start=1):
            lo_hi_later = wilson_interval(*results[later][platform_round])
            for earlier in names[:later_index]:
                lo_hi_earlier = wilson_interval(*results[earlier][platform_round])
                separated = lo_hi_later[1] < lo_hi_earlier[0]
                verdicts.append(f"{later} < {earlier}: {'yes' if separated else 'inside the interval'}")
        print(f"round {platform_round} examples: " + "; ".join(verdicts))

    print()
    acc_columns = ["dev", *accuracy[next(iter(accuracy))].keys(), "training"]
    print(f"| target | {' | '.join(acc_columns)} |")
    print("|---|" + "---:|" * len(acc_columns))
    for name, figures in accuracy.items():
        card = cards[name]
        dev = card.get("dev_accuracy")
        row = [f"{100 * dev:.1f}%" if isinstance(dev, int | float) else "–"]
        row += [f"{100 * c / n:.1f}%" if n else "–" for c, n in figures.values()]
        natural = card["training"].get("natural") or {}
        row.append(
            f"{card['training']['seconds']:.0f} s" + (f" ({natural['n']} natural texts)" if natural else "")
        )
        print(f"| {name} | {' | '.join(row)} |")


if __name__ == "__main__":
    main()
