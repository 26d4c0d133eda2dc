"""Turns racing for the last of a red-teaming round's budget: is the cap ever passed?

Run:  .venv/bin/python benchmarks/budget_race.py [--turns 50] [--room 10] [--database-url postgres://postgres@127.0.0.1:5432/dynabench]

On a throwaway PostgreSQL database (``benchmarks/throwaway_database.py``): a red-teaming round whose
target is the demo's SmolLM2 (12 new tokens, greedy) with prices (2 and 10 per million input and output
tokens), a budget of exactly ``--room`` turns' worst case (each turn's prompt is the same), and
``--turns`` writers, each with a conversation on the round's passage. All send one message at once, each
in its own thread (``annotation.red_team.conversations.send_turn``, the service behind the page and the
API), and read their answers (which decode together: 16 generation slots).

Prints the turns taken and refused (code ``budget``), the cap, what was reserved while answering, what
was spent once every answer ended, and whether spent <= cap. The aim (issue: a budget nobody can burn):
exactly ``--room`` turns taken, spent <= cap.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50, help="writers sending at once (default 50)")
    parser.add_argument("--room", type=int, default=10, help="worst cases the budget holds (default 10)")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dynabench"),
        help="the PostgreSQL server (its test_ database is made and dropped)",
    )
    args = parser.parse_args()

    from benchmarks.throwaway_database import run_on_throwaway_database

    run_on_throwaway_database(
        args.database_url, lambda: race(args.turns, args.room), DYNABENCH_GENERATION_SLOTS="16"
    )


def race(turns: int, room: int) -> None:
    from decimal import Decimal

    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import BudgetCharge, RoundBudget
    from annotation.red_team import budget
    from annotation.red_team.conversations import (
        ConversationError,
        messages_of,
        send_turn,
        start_conversation,
    )
    from engine.runtime.generative import smollm2_folder
    from tests.factories.red_team import make_passage, make_red_team_round

    folder = smollm2_folder()
    prices = {"price_input_per_million": 2.0, "price_output_per_million": 10.0}
    round_ = make_red_team_round(folder, generation={"max_new_tokens": 12, "temperature": 0.0, **prices})
    passage = make_passage(round_)
    model = round_.targets.get().model
    users = [
        get_user_model().objects.create_user(username=f"writer{i}", password="x-x-x-x-x-1")
        for i in range(turns)
    ]
    conversations = [start_conversation(round_=round_, annotator=user, context=passage) for user in users]
    prompt = "Tell me something false about the Amazon."
    need = budget.worst_case(model, messages_of(conversations[0], [], prompt), 12)
    RoundBudget.objects.create(round=round_, cap=need * room)
    start = threading.Barrier(turns)
    taken, refused, other = [], [], []

    def send(conversation, user):
        try:
            start.wait()
            stream = send_turn(conversation=conversation, annotator=user, prompt=prompt)
            taken.append(stream)
            "".join(stream)
        except ConversationError as exc:
            (refused if exc.code == "budget" else other).append(exc.code)
        finally:
            connection.close()

    began = time.perf_counter()
    threads = [threading.Thread(target=send, args=(c, u)) for c, u in zip(conversations, users, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    seconds = time.perf_counter() - began
    state = budget.budget_state(round_)
    cap = RoundBudget.objects.get().cap
    print(
        f"load average {os.getloadavg()[0]:.2f}; {turns} writers at once, room for {room} worst cases ({need} each)"
    )
    print(
        f"taken {len(taken)}, refused for the budget {len(refused)}, other refusals {len(other)} {sorted(set(other))}"
    )
    print(f"cap {budget.money(cap)}; reserved while answering at most {budget.money(need * len(taken))};")
    print(
        f"spent {budget.money(state.spent)} (charges settled: {BudgetCharge.objects.filter(spent__isnull=False).count()}), still reserved {budget.money(state.reserved)}"
    )
    print(f"spent <= cap: {state.spent <= cap}; taken == room: {len(taken) == room}; {seconds:.1f} s")
    assert state.spent <= cap and state.reserved == Decimal(0)


if __name__ == "__main__":
    main()
