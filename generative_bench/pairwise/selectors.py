"""Reads of pairwise judges: their figures against people's votes (``core.pairwise_judge``)."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import Example
from core.pairwise_judge import PairwiseJudgeFigures, pairwise_judge_figures
from tasks.models import Task

from ..models import Battle, PairwiseJudge, PairwiseVerdict, Replay, ReplayAnswer

#: A settled rating example's status -> whether people judged the replayed answer failed.
_RATED_FAILED = {Example.Status.VALIDATED_CORRECT: False, Example.Status.VALIDATED_INCORRECT: True}


@dataclass(frozen=True)
class PairwisePanel:
    """A pairwise judge and its figures: on arena battles, and on replay pairs (``replay_pairs``)."""

    judge: PairwiseJudge
    figures: PairwiseJudgeFigures
    replay_figures: PairwiseJudgeFigures


def replay_pairs(task: Task) -> list[tuple[ReplayAnswer, ReplayAnswer]]:
    """Every **replay pair** of ``task``: two models' answered ``keep`` replays of one conversation (the
    same messages sent to both), as ``(a, b)`` with a's model id the lower; every two models of a round's
    replays, ordered by example then models. One query."""
    answers = (
        ReplayAnswer.objects.filter(
            replay__round__task=task,
            replay__target_turns=Replay.TargetTurns.KEEP,
            status=ReplayAnswer.Status.OK,
            example__metadata__mode="conversation",
        )
        .select_related("replay")
        .order_by("example_id", "replay__model_id")
    )
    by_example: dict[int, list[ReplayAnswer]] = {}
    for answer in answers:
        by_example.setdefault(answer.example_id, []).append(answer)
    return [
        (a, b)
        for group in by_example.values()
        for i, a in enumerate(group)
        for b in group[i + 1 :]
        if a.replay.model_id != b.replay.model_id
    ]


def people_preference(failed_a: bool | None, failed_b: bool | None) -> str | None:
    """People's preference between two rated answers: the one they judged good over the one they judged
    failed ("a" or "b"), "tie" when they judged both alike, None unless both were rated and settled."""
    if failed_a is None or failed_b is None:
        return None
    if failed_a == failed_b:
        return "tie"
    return "b" if failed_a else "a"


def _replay_figures(
    judge: PairwiseJudge, pairs_of_task: list[tuple[ReplayAnswer, ReplayAnswer]]
) -> PairwiseJudgeFigures:
    """``judge``'s figures on its task's replay pairs (``pairs_of_task``: ``replay_pairs`` of the task),
    against people's ratings of the two answers (``people_preference``). Two queries."""
    orders: dict[tuple[int, int], list] = {}
    for a, b, order, preferred in PairwiseVerdict.objects.filter(
        judge=judge, battle__isnull=True
    ).values_list("answer_a_id", "answer_b_id", "order", "preferred"):
        orders.setdefault((a, b), [None, None])[0 if order == "ab" else 1] = preferred or None
    if not orders:
        return pairwise_judge_figures({}, {})
    rated = {
        pk: _RATED_FAILED.get(status)
        for pk, status in ReplayAnswer.objects.filter(
            pk__in={pk for pair in orders for pk in pair}
        ).values_list("pk", "rating_example__status")
    }
    pairs = {
        (a.pk, b.pk): (
            a.replay.model_id,
            b.replay.model_id,
            people_preference(rated.get(a.pk), rated.get(b.pk)),
        )
        for a, b in pairs_of_task
        if (a.pk, b.pk) in orders
    }
    return pairwise_judge_figures({key: (v[0], v[1]) for key, v in orders.items() if key in pairs}, pairs)


def pairwise_panels(task: Task) -> list[PairwisePanel]:
    """The task's active pairwise judges by name with their figures (the task's replay pairs read once,
    then four queries per judge): each battle's two orders combined, against people's votes on the same
    battles; each replay pair's, against people's ratings of its two answers."""
    judges = list(
        PairwiseJudge.objects.filter(task=task, is_active=True).select_related("model").order_by("name")
    )
    pairs_of_task = replay_pairs(task) if judges else []
    panels = []
    for judge in judges:
        orders: dict[int, list] = {}
        for battle_id, order, preferred in PairwiseVerdict.objects.filter(
            judge=judge, battle__isnull=False
        ).values_list("battle_id", "order", "preferred"):
            orders.setdefault(battle_id, [None, None])[0 if order == "ab" else 1] = preferred or None
        battles = {
            pk: (a, b, vote or None)
            for pk, a, b, vote in Battle.objects.filter(pk__in=list(orders)).values_list(
                "pk", "model_a_id", "model_b_id", "vote"
            )
        }
        figures = pairwise_judge_figures({k: (v[0], v[1]) for k, v in orders.items()}, battles)
        panels.append(PairwisePanel(judge, figures, _replay_figures(judge, pairs_of_task)))
    return panels
