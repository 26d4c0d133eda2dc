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
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, InvalidOperation

from django.db.models import Case, DecimalField, F, Sum, When
from django.utils import timezone

from annotation.models import BudgetCharge, RoundBudget, Turn
from models_registry.serving import prompt_tokens
from tasks.page_sections import PageSection

logger = logging.getLogger(__name__)

#: A remote prompt's template tokens per message on top of its text's bytes (ChatML adds 5:
#: ``<|im_start|>``, the role, a newline, ``<|im_end|>``, a newline; other templates as many or fewer).
TOKENS_PER_MESSAGE = 8
#: A remote prompt's template tokens besides its messages (the reply's opening, a default system text).
TEMPLATE_TOKENS = 64
#: Money is kept to a millionth of the prices' unit, rounded up (a cap is never passed by a rounding).
QUANTUM = Decimal("0.000001")
PER_MILLION = Decimal(1_000_000)


class BudgetExceeded(Exception):
    """A turn whose worst case would pass one of the round's caps; the message says which and what is
    left, for the writer."""


@dataclass(frozen=True)
class BudgetState:
    """A round's budget as the task page shows it: ``cap`` and ``spent`` (settled turns), ``reserved``
    (turns being answered), ``left`` (cap - spent - reserved, at least 0); None fields for a round
    without a budget."""

    cap: Decimal | None
    spent: Decimal
    reserved: Decimal

    @property
    def left(self) -> Decimal | None:
        return None if self.cap is None else max(Decimal(0), self.cap - self.spent - self.reserved)


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
    if values is None or not all(v.is_finite() and v >= 0 for v in values):
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


def _charged(queryset) -> Decimal:
    """The sum of the charges of ``queryset``: ``spent`` once settled, ``reserved`` before."""
    field = DecimalField(max_digits=14, decimal_places=6)
    total = queryset.aggregate(
        total=Sum(Case(When(spent__isnull=True, then=F("reserved")), default=F("spent"), output_field=field))
    )["total"]
    return total or Decimal(0)


def _left(cap: Decimal, used: Decimal) -> str:
    return money(max(Decimal(0), cap - used))


def reserve(
    *, turn: Turn, annotator, model, messages: list[dict], max_new_tokens: int
) -> BudgetCharge | None:
    """Reserve ``turn``'s worst case on its round's budget; call inside the transaction that stores the
    turn (a refusal then stores nothing). None when the round has no budget or the target no prices.

    Raises:
        BudgetExceeded: the worst case would pass the round's cap, the writer's or the day's.
    """
    round_ = turn.conversation.round
    budget = RoundBudget.objects.select_for_update().filter(round=round_).first()
    if budget is None:
        return None
    need = worst_case(model, messages, max_new_tokens)
    if need is None:
        return None
    charges = BudgetCharge.objects.filter(round=round_)
    day = timezone.now().astimezone(datetime.UTC).date()
    used = _charged(charges)
    if used + need > budget.cap:
        raise BudgetExceeded(
            f"This round's budget for the model is spent ({_left(budget.cap, used)} of {money(budget.cap)} "
            "left, not enough for another answer); your message was not sent."
        )
    if budget.per_person is not None:
        mine = _charged(charges.filter(annotator=annotator))
        if mine + need > budget.per_person:
            raise BudgetExceeded(
                "You have used your share of this round's budget for the model "
                f"({_left(budget.per_person, mine)} of {money(budget.per_person)} left); your message was not sent."
            )
    if budget.per_day is not None:
        today = _charged(charges.filter(day=day))
        if today + need > budget.per_day:
            raise BudgetExceeded(
                "Today's budget for the model in this round is spent "
                f"({_left(budget.per_day, today)} of {money(budget.per_day)} left); try again tomorrow (UTC)."
            )
    return BudgetCharge.objects.create(turn=turn, round=round_, annotator=annotator, day=day, reserved=need)


def settle(turn: Turn, model) -> None:
    """Charge ``turn`` its answer's cost (from its stored generation record), or its reservation when no
    tokens were counted; nothing for a turn without a charge. Settling twice changes nothing."""
    cost = cost_of(model, turn.generation or {})
    charge = BudgetCharge.objects.filter(turn=turn, spent__isnull=True)
    if cost is None:
        charge.update(spent=F("reserved"))
    else:
        charge.update(spent=cost)


def budget_state(round_) -> BudgetState:
    """The round's budget, spent and reserved (three queries)."""
    budget = RoundBudget.objects.filter(round=round_).first()
    charges = BudgetCharge.objects.filter(round=round_)
    settled = _charged(charges.filter(spent__isnull=False))
    return BudgetState(
        cap=budget.cap if budget else None,
        spent=settled,
        reserved=_charged(charges.filter(spent__isnull=True)),
    )


def task_page_section(request, task) -> PageSection | None:
    """The task page's "Budget for the model" table (``tasks.page_sections``): per round with a budget,
    its cap, spent, answering now and left, and with a cap per day what is left of it today (UTC); None
    for a task with no budgeted round. Three or four queries a round."""
    budgets = RoundBudget.objects.filter(round__task=task).select_related("round").order_by("round__number")
    rows = []
    today = timezone.now().astimezone(datetime.UTC).date()
    for b in budgets:
        state = budget_state(b.round)
        left_today = None
        if b.per_day is not None:
            spent_today = _charged(BudgetCharge.objects.filter(round=b.round, day=today))
            left_today = max(Decimal(0), b.per_day - spent_today)
        rows.append(
            {
                "round": b.round.number,
                "cap": money(state.cap),
                "spent": money(state.spent),
                "reserved": money(state.reserved),
                "left": money(state.left),
                "per_person": money(b.per_person),
                "per_day": money(b.per_day),
                "left_today": money(left_today),
            }
        )
    if not rows:
        return None
    return PageSection("annotation/red_team/_budget.html", {"rows": rows})


def money(value: Decimal | None) -> str:
    """``value`` without trailing zeros or an exponent ("12.5", "0.000375", "10"); "–" for None."""
    return "–" if value is None else f"{value.normalize():f}"
