"""The pairwise judge's job: every battle of the task with two answers, and every replay pair (two models'
replayed answers to one conversation, ``selectors.replay_pairs``), voted in both orders
(docs/benchmarking.md, "Pairwise judges"). Re-exported by ``generative_bench.jobs``."""

from __future__ import annotations

import logging

from core.pairwise_judge import unswap
from models_registry.serving import InferenceError, choose, without_server_paths

from ..judges.prompts import conversation_text
from ..models import Battle, PairwiseJudge, PairwiseVerdict, ReplayAnswer
from .selectors import replay_pairs
from .services import OPTIONS, PROMPT

logger = logging.getLogger(__name__)

#: The battles whose answers can be compared: both answered (ready to vote, or voted).
COMPARABLE = (Battle.Status.READY, Battle.Status.VOTED)
MAX_ERROR = 2000


def prompt_for(messages: list[dict], first: str, second: str) -> list[dict]:
    """The messages sent for a pair whose models were sent ``messages`` (a battle's, or a replay pair's),
    with ``first`` shown as answer 1 and ``second`` as answer 2: the passage (the system message), the
    conversation, both answers (``PROMPT``)."""
    system = [m.get("content", "") for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    text = PROMPT.format(
        context="\n\n".join(system).strip() or "(none)",
        conversation=conversation_text(rest),
        answer_1=first,
        answer_2=second,
    )
    return [{"role": "user", "content": text}]


def _vote(judge: PairwiseJudge, messages: list[dict], answer_a: str, answer_b: str, order: str) -> dict:
    first, second = (answer_a, answer_b) if order == "ab" else (answer_b, answer_a)
    try:
        picked = choose(judge.model, prompt_for(messages, first, second), OPTIONS)
    except InferenceError as exc:
        return {"preferred": "", "scores": [], "error": without_server_paths(str(exc), None)[:MAX_ERROR]}
    shown = ("a", "b", "tie")[picked.picked]  # in the order shown: "a" is answer 1
    return {
        "preferred": shown if order == "ab" else unswap(shown),
        "scores": list(picked.normalised),
        "error": "",
    }


def run_pairwise_judge_job(judge_id: int) -> str:
    """Vote every comparable battle and every replay pair of the judge's task in each order it has no
    readable verdict in; a verdict that failed is tried again on the next run. Returns the judge's final
    status."""
    judge = PairwiseJudge.objects.select_related("model", "task").get(pk=judge_id)
    PairwiseJudge.objects.filter(pk=judge_id).update(status="running", progress="Starting.")
    done = {
        (battle_id, a, b, order)
        for battle_id, a, b, order in PairwiseVerdict.objects.filter(judge=judge)
        .exclude(preferred="")
        .values_list("battle_id", "answer_a_id", "answer_b_id", "order")
    }
    battles = list(Battle.objects.filter(task=judge.task, status__in=COMPARABLE).order_by("pk"))
    todo: list[tuple[Battle | None, ReplayAnswer | None, ReplayAnswer | None, str]] = [
        (b, None, None, o) for b in battles for o in ("ab", "ba") if (b.pk, None, None, o) not in done
    ]
    todo += [
        (None, a, b, o)
        for a, b in replay_pairs(judge.task)
        for o in ("ab", "ba")
        if (None, a.pk, b.pk, o) not in done
    ]
    failed = 0
    for n, (battle, answer_a, answer_b, order) in enumerate(todo, start=1):
        if battle is not None:
            fields = _vote(judge, battle.messages, battle.answer_a, battle.answer_b, order)
        else:
            fields = _vote(judge, answer_a.messages, answer_a.answer, answer_b.answer, order)
        failed += not fields["preferred"]
        PairwiseVerdict.objects.update_or_create(
            judge=judge, battle=battle, answer_a=answer_a, answer_b=answer_b, order=order, defaults=fields
        )
        if n % 10 == 0 or n == len(todo):
            PairwiseJudge.objects.filter(pk=judge_id).update(
                progress=f"{n} of {len(todo)} votes, {failed} failed"
            )
    status = "done" if not failed else "failed"
    PairwiseJudge.objects.filter(pk=judge_id).update(
        status=status,
        progress=f"{len(todo)} votes asked, {failed} failed" if todo else "Nothing new to vote.",
    )
    return status
