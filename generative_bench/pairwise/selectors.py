"""Reads of pairwise judges: their figures against people's votes (``core.pairwise_judge``)."""

from __future__ import annotations

from dataclasses import dataclass

from core.pairwise_judge import PairwiseJudgeFigures, pairwise_judge_figures
from tasks.models import Task

from ..models import Battle, PairwiseJudge, PairwiseVerdict


@dataclass(frozen=True)
class PairwisePanel:
    """A pairwise judge and its figures."""

    judge: PairwiseJudge
    figures: PairwiseJudgeFigures


def pairwise_panels(task: Task) -> list[PairwisePanel]:
    """The task's active pairwise judges by name with their figures (two queries per judge): each
    battle's two orders combined, against people's votes on the same battles."""
    panels = []
    for judge in (
        PairwiseJudge.objects.filter(task=task, is_active=True).select_related("model").order_by("name")
    ):
        orders: dict[int, list] = {}
        for battle_id, order, preferred in PairwiseVerdict.objects.filter(judge=judge).values_list(
            "battle_id", "order", "preferred"
        ):
            orders.setdefault(battle_id, [None, None])[0 if order == "ab" else 1] = preferred or None
        battles = {
            pk: (a, b, vote or None)
            for pk, a, b, vote in Battle.objects.filter(pk__in=list(orders)).values_list(
                "pk", "model_a_id", "model_b_id", "vote"
            )
        }
        figures = pairwise_judge_figures({k: (v[0], v[1]) for k, v in orders.items()}, battles)
        panels.append(PairwisePanel(judge, figures))
    return panels
