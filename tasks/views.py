"""The task list and a task's page."""

from django.shortcuts import render

from . import selectors
from .charts import Series, amount_chart, histogram_chart, rate_chart
from .kinds import conversational
from .page_sections import sections_for
from .red_team_stats import red_team_stats
from .round_stats import round_counts_for_task
from .task_cards import task_cards
from .uncertainty_stats import uncertainty_stats


def task_list(request):
    """The task list: a card per active task (``tasks.task_cards.TaskCard``: status, the current round's
    MER, the viewer's own count, Write and Validate buttons when open)."""
    return render(request, "tasks/task_list.html", {"cards": task_cards(request.user)})


def task_detail(request, slug: str):
    """A task's page: instructions, content warning, per-round statistics, the MER/vMER plot, a "write" button.

    A red-teaming task's page replaces MER and vMER by the attack success rate: per round, per failure
    category and per number of turns, with the model cost (``tasks.red_team_stats``), and its plot.
    The sections the apps above register (``tasks.page_sections``) follow, such as the cycle matrix.
    """
    task = selectors.task_or_404(slug)
    counts = round_counts_for_task(task)
    by_conversation = conversational(task.cfg)
    by_round = red_team_stats(task, [c.round for c in counts])
    red_team = [by_round[c.round.pk] for c in counts] if by_conversation else []
    unsure = uncertainty_stats(task, [c.round for c in counts])
    unsure_rows = [unsure[c.round.pk] for c in counts] if unsure else []
    return render(
        request,
        "tasks/task_detail.html",
        {
            "task": task,
            "cfg": task.cfg,
            "conversational": by_conversation,
            "round_counts": counts,
            "mer_chart": asr_chart(red_team) if by_conversation else mer_chart(counts),
            "cost_chart": cost_chart(counts),
            "collecting": task.open_round is not None,
            "red_team_stats": red_team,
            "uncertainty_stats": unsure_rows,
            "uncertainty_charts": [(s, confidence_histogram(task.cfg, s)) for s in unsure_rows if s.answers],
            # What the apps above add (tasks.page_sections): the cycle matrix of leaderboards.
            "page_sections": sections_for(request, task),
        },
    )


def asr_chart(stats):
    """A red-teaming task's claimed rate and attack success rate per round (``RedTeamStats``), as an
    inline SVG chart, the attack success rate with its 95% interval across people as a whisker; a round
    without attempts has no point."""
    return rate_chart(
        [str(s.round.number) for s in stats],
        [
            Series("Claimed rate", [s.claimed_rate for s in stats]),
            Series(
                "Attack success rate",
                [s.attack_success_rate for s in stats],
                [s.asr.interval if s.asr is not None else None for s in stats],
            ),
        ],
        title="Claimed failure rate and attack success rate per round",
        x_title="Round",
    )


def mer_chart(counts):
    """The MER and vMER per round as an inline SVG chart (``tasks.charts.Chart``).

    A round whose MER is None (no collected example with a model verdict: nothing collected here, an
    imported round, a round without a target model) has no point: no live verdict is not a rate of 0.
    """
    return rate_chart(
        [str(c.round.number) for c in counts],
        [Series("MER", [c.mer for c in counts]), Series("vMER", [c.vmer for c in counts])],
        title="Model error rate (MER) and validated MER (vMER) per round",
        x_title="Round",
    )


def confidence_histogram(cfg, stats):
    """An uncertainty-mode round's histogram of the target's measure (``UncertaintyStats.histogram``) with
    the goal's threshold as a dashed line."""
    goal = cfg.uncertainty
    return histogram_chart(
        stats.histogram,
        threshold=goal.threshold,
        threshold_label=f"goal: {goal.rule}",
        title=f"Round {stats.round.number}: the model's {goal.measure_name} on its examples",
        x_title=goal.measure_name.capitalize(),
    )


def cost_chart(counts):
    """The crowd cost per verified model-fooling example per round (``RoundCounts.cost``), as an inline
    SVG chart in the rounds' currency; None when no round has one (nothing paid through a study, or the
    rounds were paid in several currencies, which one axis cannot show)."""
    costs = [c.cost for c in counts]
    currencies = {cost.currency for cost in costs if cost is not None}
    if len(currencies) != 1 or all(cost is None or cost.per_verified_fooling is None for cost in costs):
        return None
    (currency,) = currencies
    return amount_chart(
        [str(c.round.number) for c in counts],
        [
            None if cost is None or cost.per_verified_fooling is None else float(cost.per_verified_fooling)
            for cost in costs
        ],
        unit=currency,
        title=f"Crowd cost per verified model-fooling example per round ({currency})",
        x_title="Round",
    )
