"""Several models in one conversation in the demo (docs/demo.md, "Side by side"): once the red-teaming
pilot has run, round 1's first messages go to both of the task's models side by side
(``red_team.side_by_side.models`` 2, the second model made a round target), and six of the pilot's
red-teamers hold one such conversation each, so the task page's per-model table and the arena's rated
pairs have data to show.

Real: the answers (SmolLM2 with the target's and the second model's settings, through ``send_turn``), the
ratings and choices (``rate_answers``), the judgements (``submit_conversation``). Simulated: the people,
who rate by the pilot's rules (``red_team_pilot``: an answer containing a SQuAD reference answer is
supported; ``helpfulness``) with their own error, and a 1-100 score from those (``score_of``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from annotation.models import Conversation
from annotation.red_team.conversations import (
    abandon_conversation,
    send_turn,
    start_conversation,
    submit_conversation,
)
from annotation.red_team.side_by_side import rate_answers
from demo.demo_tasks.base import pilot_account
from demo.demo_tasks.red_team_pilot import (
    SEED,
    Person,
    _questions,
    category_of,
    helpfulness,
    people,
    rubric_of,
    supported,
)
from models_registry.models import RegisteredModel
from models_registry.round_targets import set_round_targets
from tasks.models import Context, Task
from tasks.services import set_config

Log = Callable[[str], None]

#: Models answering each first message in the demo, and the pilot's red-teamers who hold one such
#: conversation each (five or more: the table's intervals need five writers).
MODELS = 2
WRITERS = 6


def ensure_side_by_side(
    task: Task, target: RegisteredModel, second: RegisteredModel | None, log: Log
) -> bool:
    """Round 1's targets the target then ``second``, and the task's config ``side_by_side`` with ``MODELS``;
    True when the task has the section. A config that has it is left as it is (an owner's own setting
    stays); nothing while a model is not ready."""
    if task.cfg.side_by_side:
        return True
    ready = RegisteredModel.Status.READY
    if second is None or target.status != ready or second.status != ready:
        return False
    round_ = task.rounds.get(number=1)
    set_round_targets(round=round_, models=[target, second])
    config = {**task.config, "red_team": {**task.config["red_team"], "side_by_side": {"models": MODELS}}}
    set_config(task=task, config=config)
    log(f"[{task.slug}] Side by side: first messages now go to {target.name} and {second.name}, unnamed.")
    return True


def score_of(rubric: dict[str, str], rng: random.Random) -> int:
    """A simulated 1-100 rating of an answer from its rubric answers: ``15 + 15 x helpful`` (1-5), 10 more
    when supported, plus a person's noise (normal, sd 8), kept in 1-100."""
    base = 15 + 15 * int(rubric["helpful"]) + (10 if rubric["supported"] == "yes" else 0)
    return max(1, min(100, round(base + rng.gauss(0, 8))))


def side_by_side_pilot(task: Task, *, squad_file: Path, log: Log, writers: int = WRITERS) -> int:
    """``writers`` of the pilot's red-teamers (the same seeded people as ``red_team_pilot``) each hold one
    side-by-side conversation on a passage of round 1: both answers rated and the better one chosen
    (``rate_answers``), then the conversation judged with the chosen answer's rubric. Idempotent: a
    writer who has one judged is skipped, an open one left by a cut is abandoned. Returns how many were
    added."""
    round_ = task.rounds.get(number=1)
    if not round_.is_open or not task.cfg.side_by_side:
        return 0
    red_teamers, _ = people(random.Random(SEED))
    rng = random.Random(SEED + 1)
    questions = _questions(squad_file)
    contexts = [
        c for c in Context.objects.filter(round=round_).order_by("-pk") if questions.get(c.external_id)
    ]
    added = 0
    for n, person in enumerate(red_teamers[:writers]):
        user = pilot_account(person.username)
        mine = Conversation.objects.filter(round=round_, annotator=user, side_by_side__gt=0)
        context = contexts[n % len(contexts)]
        question, references = rng.choice(questions[context.external_id])
        if mine.filter(status=Conversation.Status.SUBMITTED).exists():
            continue
        for open_ in Conversation.objects.filter(
            round=round_, annotator=user, status=Conversation.Status.OPEN
        ):
            abandon_conversation(conversation=open_, annotator=user)
        if added == 0:
            log(f"[{task.slug}] Side by side: {writers} pilot red-teamers rate two answers each...")
        added += _one(round_, user, person, context, question, references, rng)
    return added


def _one(round_, user, person: Person, context, question: str, references: list[str], rng) -> int:
    conversation = start_conversation(round_=round_, annotator=user, context=context)
    turns = [
        t
        for t in send_turn(conversation=conversation, annotator=user, prompt=question).drain()
        if t.status == "answered"
    ]
    if not turns:
        abandon_conversation(conversation=conversation, annotator=user)
        return 0
    judged = {}
    for turn in turns:
        is_supported = supported(turn.answer, references)
        rubric = rubric_of(is_supported, helpfulness(turn.answer, question, is_supported), person, rng)
        failed = rubric["supported"] == "no"
        judged[turn.slot_letter] = {
            "score": score_of(rubric, rng),
            "rubric": rubric,
            "categories": [category_of(turn.answer, references)] if failed else [],
        }
    chosen = max(judged, key=lambda letter: (judged[letter]["score"], letter == "A"))
    rated = rate_answers(conversation=conversation, annotator=user, ratings=judged, chosen=chosen)
    submit_conversation(
        conversation=rated,
        annotator=user,
        rubric_answers=judged[chosen]["rubric"],
        categories=judged[chosen]["categories"],
    )
    return 1
