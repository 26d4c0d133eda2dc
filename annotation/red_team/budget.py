"""A red-teaming round's spending cap on its target (``RoundBudget``): every turn reserves its worst case
before the model is called and settles at its cost when the answer ends (docs/generative.md, "A budget
per round").

**Exact under concurrency.** ``reserve`` runs in the transaction that stores the turn and first locks
the round's budget row (``SELECT ... FOR UPDATE``): two turns of one round reserve one after the other,
each seeing what the other took, so no two both take the last cent. The sums it compares are every
turn's charge: ``spent`` once settled, ``reserved`` before (``BudgetCharge``).

**The worst case** of a turn is its prompt's tokens and its whole token budget at the target's prices:
``(prompt tokens x input price + max_new_tokens x output price) / 10^6``. A local target's prompt tokens
are counted with its own tokenizer and template (``serving.prompt_tokens``). A remote target's tokenizer
is not here: its prompt is bounded by its UTF-8 bytes, plus ``TOKENS_PER_MESSAGE`` per message and
``TEMPLATE_TOKENS`` for the template's own text (a byte-level tokenizer, SmolLM2's, GPT's or Llama 3's,
never makes more tokens than bytes; a server whose template adds a longer text of its own than
``TEMPLATE_TOKENS`` tokens can pass a cap by that much). **The cost** of an answer is its counted tokens
at the same prices (the tokens of what was generated, a partial answer's too); an answer whose server
counted nothing is charged its reservation.

A round without a budget, or a target without both prices, reserves nothing.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, InvalidOperation

from django.db.models import DecimalField, F, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import BudgetCharge, RoundBudget, Turn
from models_registry.serving import MAX_PRICE_PER_MILLION, prompt_tokens
from tasks.page_sections import PageSection

logger = logging.getLogger(__name__)

#: A remote prompt's template tokens per message on top of its text's bytes (ChatML adds 5:
#: ``<|im_start|>``, the role, a newline, ``<|im_end|>``, a newline; other templates as many or fewer).
TOKENS_PER_MESSAGE = 8
#: A remote prompt's template tokens besides its messages (the reply's opening, a default system text).
TEMPLATE_TOKENS = 64
#: Money is kept to a millionth of the prices' unit, rounded up (a cap is never passed by a rounding).
QUANTUM = Decimal("0.000001")
#: Prices above this are refused where they enter; one stored before counts nothing (``prices_of``).
MAX_PRICE = Decimal(str(MAX_PRICE_PER_MILLION))
PER_MILLION = Decimal(1_000_000)
_AMOUNT = DecimalField(max_digits=14, decimal_places=6)


def charge_of(prefix: str = "") -> Coalesce:
    """A turn's charge: ``spent`` once settled, ``reserved`` before; ``prefix`` reaches the charges from
    another model (``"round__budget_charges__"`` from ``RoundBudget``)."""
    return Coalesce(F(f"{prefix}spent"), F(f"{prefix}reserved"), output_field=_AMOUNT)


#: A turn's charge, over the charges themselves.
CHARGE = charge_of()
#: How a ``RoundBudget`` row reaches its round's charges.
FROM_BUDGET = "round__budget_charges__"


def _sum(expression, **condition):
    """The sum of ``expression`` over the charges meeting ``condition`` (0 for none), for ``aggregate``."""
    return Coalesce(
        Sum(expression, filter=Q(**condition) if condition else None), Value(Decimal(0)), output_field=_AMOUNT
    )


class BudgetExceeded(Exception):
    """A turn whose worst case would pass one of the round's caps; the message says which and what is
    left, for the writer."""


@dataclass(frozen=True)
class BudgetState:
    """A round's budget as the task page shows it: ``cap`` and ``spent`` (settled turns), ``reserved``
    (turns being answered), ``left`` (cap - spent - reserved, at least 0), and with a cap per day
    ``per_day`` and ``left_today`` (per_day - today's charges, at least 0); None for what the round has
    no cap for."""

    cap: Decimal | None
    spent: Decimal
    reserved: Decimal
    per_day: Decimal | None = None
    charged_today: Decimal = Decimal(0)

    @property
    def left(self) -> Decimal | None:
        return None if self.cap is None else max(Decimal(0), self.cap - self.spent - self.reserved)

    @property
    def left_today(self) -> Decimal | None:
        return None if self.per_day is None else max(Decimal(0), self.per_day - self.charged_today)


def prices_of(model) -> tuple[Decimal, Decimal] | None:
    """The target's prices per million input and output tokens, or None without both."""
    stored = model.generation or {}
    prices = (stored.get("price_input_per_million"), stored.get("price_output_per_million"))
    if None in prices:
        return None
    try:
        values = Decimal(str(prices[0])), Decimal(str(prices[1]))
    except InvalidOperation:
        values = None
    if values is None or not all(v.is_finite() and 0 <= v <= MAX_PRICE for v in values):
        # Refused where prices enter (clean_generation_settings); a row stored before that check is
        # named in the log and counts nothing rather than breaking every turn.
        logger.warning("model %s has unreadable prices %r: its turns are not counted", model.pk, prices)
        return None
    return values


def _money(value: Decimal) -> Decimal:
    return value.quantize(QUANTUM, rounding=ROUND_CEILING)


def worst_case(model, messages: list[dict], max_new_tokens: int) -> Decimal | None:
    """The most one turn of ``messages`` can cost at ``model``'s prices (see the module), or None
    without prices.

    Raises:
        InferenceError: a local model's files cannot be loaded.
    """
    prices = prices_of(model)
    if prices is None:
        return None
    prompt = prompt_tokens(model, messages)
    if prompt is None:  # a remote model: bounded by the bytes
        system = str((model.generation or {}).get("system_prompt") or "")
        texts = [str(m.get("content", "")) for m in messages] + ([system] if system else [])
        prompt = sum(len(t.encode("utf-8")) + TOKENS_PER_MESSAGE for t in texts) + TEMPLATE_TOKENS
    return _money((prompt * prices[0] + max_new_tokens * prices[1]) / PER_MILLION)


def cost_of(model, generation: dict) -> Decimal | None:
    """An answer's cost from its generation record's counted tokens, or None when the model has no prices
    or a count is missing."""
    prices = prices_of(model)
    counts = (generation.get("input_tokens"), generation.get("output_tokens"))
    if prices is None or None in counts:
        return None
    return _money((counts[0] * prices[0] + counts[1] * prices[1]) / PER_MILLION)


def _left(cap: Decimal, used: Decimal) -> str:
    return money(max(Decimal(0), cap - used))


def reserve(
    *, turn: Turn, annotator, model, messages: list[dict], max_new_tokens: int
) -> BudgetCharge | None:
    """Reserve ``turn``'s worst case on its round's budget (``reserve_answers`` with one answer); None
    when the round has no budget or the target no prices.

    Raises:
        BudgetExceeded: the worst case would pass the round's cap, the writer's or the day's.
    """
    return reserve_answers(annotator=annotator, messages=messages, answers=[(turn, model, max_new_tokens)])[0]


def reserve_answers(
    *, annotator, messages: list[dict], answers: Sequence[tuple[Turn, object, int]]
) -> list[BudgetCharge | None]:
    """Reserve the worst case of every answer to one message (``(turn, model, max_new_tokens)`` each: one,
    or a side-by-side first message's k) on their round's budget, checked against each cap as one sum:
    the message is answered whole or refused whole, and a refusal says what was left before it. Call
    inside the transaction that stores the turns (a refusal then stores nothing). One charge per answer,
    in order: None for every answer when the round has no budget, and for an answer whose model has no
    prices.

    Raises:
        BudgetExceeded: the answers' worst cases together would pass the round's cap, the writer's or the
            day's.
    """
    round_ = answers[0][0].conversation.round
    budget = RoundBudget.objects.select_for_update().filter(round=round_).first()
    if budget is None:
        return [None] * len(answers)
    needs = [worst_case(model, messages, max_new_tokens) for _, model, max_new_tokens in answers]
    if all(n is None for n in needs):
        return [None] * len(answers)
    need = sum((n for n in needs if n is not None), Decimal(0))
    day = _today()
    # One query for the three sums, under the budget row's lock.
    charged = BudgetCharge.objects.filter(round=round_).aggregate(
        used=_sum(CHARGE), mine=_sum(CHARGE, annotator=annotator), today=_sum(CHARGE, day=day)
    )
    used, mine, today = charged["used"], charged["mine"], charged["today"]
    answers_word = "another answer" if len(answers) == 1 else f"the {len(answers)} answers to a first message"
    if used + need > budget.cap:
        raise BudgetExceeded(
            f"This round's budget for the model is spent ({_left(budget.cap, used)} of {money(budget.cap)} "
            f"left, not enough for {answers_word}); your message was not sent."
        )
    if budget.per_person is not None and mine + need > budget.per_person:
        raise BudgetExceeded(
            "You have used your share of this round's budget for the model "
            f"({_left(budget.per_person, mine)} of {money(budget.per_person)} left, not enough for "
            f"{answers_word}); your message was not sent."
        )
    if budget.per_day is not None and today + need > budget.per_day:
        raise BudgetExceeded(
            "Today's budget for the model in this round is spent "
            f"({_left(budget.per_day, today)} of {money(budget.per_day)} left, not enough for "
            f"{answers_word}); try again tomorrow (UTC)."
        )
    return [
        None
        if n is None
        else BudgetCharge.objects.create(turn=turn, round=round_, annotator=annotator, day=day, reserved=n)
        for (turn, _, _), n in zip(answers, needs, strict=True)
    ]


def settle(turn: Turn, model) -> None:
    """Charge ``turn`` its answer's cost (from its stored generation record), or its reservation when no
    tokens were counted; nothing for a turn without a charge. Settling twice changes nothing."""
    cost = cost_of(model, turn.generation or {})
    charge = BudgetCharge.objects.filter(turn=turn, spent__isnull=True)
    if cost is None:
        charge.update(spent=F("reserved"))
    else:
        charge.update(spent=cost)


def release(turn: Turn) -> None:
    """Charge nothing for ``turn``, whose model was never called (a side-by-side answer its reader left
    before it began); a charge already settled stays as it is."""
    BudgetCharge.objects.filter(turn=turn, spent__isnull=True).update(spent=Decimal(0))


def _today() -> datetime.date:
    """Today's UTC date: the day a charge counts for."""
    return timezone.now().astimezone(datetime.UTC).date()


def state_of(budget: RoundBudget | None, charges: dict) -> BudgetState:
    """``BudgetState`` from a round's budget (None: none) and the sums ``charge_sums`` names."""
    return BudgetState(
        cap=budget.cap if budget else None,
        spent=charges["charged_spent"],
        reserved=charges["charged_reserved"],
        per_day=budget.per_day if budget else None,
        charged_today=charges["charged_today"],
    )


def charge_sums(prefix: str = "") -> dict:
    """The sums a ``BudgetState`` needs, for ``aggregate`` over charges (``prefix`` ""), or for
    ``annotate`` over rows that reach them (e.g. ``"round__budget_charges__"`` from ``RoundBudget``):
    ``charged_spent`` (settled), ``charged_reserved`` (still answering) and ``charged_today`` (every
    charge of today, UTC): named apart from the charges' own fields, which the sums read."""
    return {
        "charged_spent": _sum(F(f"{prefix}spent")),
        "charged_reserved": _sum(F(f"{prefix}reserved"), **{f"{prefix}spent__isnull": True}),
        "charged_today": _sum(
            charge_of(prefix),
            **{f"{prefix}day": _today()},
        ),
    }


def with_charges(budgets):
    """``budgets`` (a ``RoundBudget`` queryset) with their rounds' charge sums added in the same query,
    for ``charged_state``."""
    return budgets.annotate(**charge_sums(FROM_BUDGET))


def charged_state(budget: RoundBudget) -> BudgetState:
    """The ``BudgetState`` of a budget read through ``with_charges``.

    Raises:
        AttributeError: ``budget`` was not read through ``with_charges``.
    """
    return state_of(budget, {name: getattr(budget, name) for name in charge_sums()})


def budget_state(round_) -> BudgetState:
    """The round's budget, spent, reserved and charged today (two queries)."""
    budget = RoundBudget.objects.filter(round=round_).first()
    return state_of(budget, BudgetCharge.objects.filter(round=round_).aggregate(**charge_sums()))


def task_page_section(request, task) -> PageSection | None:
    """The task page's "Budget for the model" table (``tasks.page_sections``): per round with a budget,
    its cap, spent, answering now and left, with a cap per person what is left of it for the signed-in
    viewer, and with a cap per day what is left of it today (UTC); None for a task with no budgeted
    round. One query."""
    budgets = with_charges(RoundBudget.objects.filter(round__task=task)).select_related("round")
    viewer = request.user if request.user.is_authenticated else None
    if viewer is not None:
        budgets = budgets.annotate(
            charged_mine=_sum(charge_of(FROM_BUDGET), **{f"{FROM_BUDGET}annotator": viewer})
        )
    rows = []
    for b in budgets.order_by("round__number"):
        state = charged_state(b)
        yours = None
        if viewer is not None and b.per_person is not None:
            yours = max(Decimal(0), b.per_person - b.charged_mine)
        rows.append(
            {
                "round": b.round.number,
                "cap": money(state.cap),
                "spent": money(state.spent),
                "reserved": money(state.reserved),
                "left": money(state.left),
                "per_person": money(b.per_person),
                "yours_left": money(yours),
                "per_day": money(b.per_day),
                "left_today": money(state.left_today),
            }
        )
    return PageSection("annotation/red_team/_budget.html", {"rows": rows}) if rows else None


def money(value: Decimal | None) -> str:
    """``value`` without trailing zeros or an exponent ("12.5", "0.000375", "10"); "–" for None."""
    return "–" if value is None else f"{value.normalize():f}"
