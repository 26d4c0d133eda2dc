"""Template filters for rates with their intervals across people (``{% load rates %}``;
``core.clustered.ClusteredRate``)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from core.clustered import MIN_PEOPLE, WILSON_PEOPLE

register = template.Library()

#: Under this many people the simulated coverage of a 95% interval is about 84-91%
#: (docs/generative.md, "Intervals across people"): the page says so beside it.
FEW_PEOPLE = 30


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%" if value >= 0.01 or value == 0 else f"{value * 100:.1f}%"


@register.filter
def across_people(rate) -> str:
    """A ``ClusteredRate``'s interval as the page writes it beside the rate: "95% interval 12% to 68%
    across 30 people, effective sample 82 of 120 conversations", with a note when the interval comes
    from few people or from Wilson over people; "" for None or no rate."""
    if rate is None or rate.rate is None:
        return ""
    if rate.interval is None:
        return format_html(
            '<span class="muted interval">no interval: {} {} (at least {} needed)</span>',
            rate.people,
            "person" if rate.people == 1 else "people",
            MIN_PEOPLE,
        )
    low, high = rate.interval
    notes = []
    if rate.method == WILSON_PEOPLE:
        notes.append("people do not differ here: Wilson's interval over people")
    if rate.people < FEW_PEOPLE:
        notes.append(f"under {FEW_PEOPLE} people, it may be too narrow")
    return format_html(
        '<span class="muted interval" title="{}">95% interval {} to {} across {} people, effective '
        "sample {} of {} conversations{}</span>",
        "studentized cluster bootstrap over people (docs: Intervals across people)",
        _percent(low),
        _percent(high),
        rate.people,
        f"{rate.effective_n:.0f}",
        f"{rate.n:.0f}",
        f" ({'; '.join(notes)})" if notes else "",
    )


@register.filter
def money_interval(interval) -> str:
    """``(low, high)`` of an amount as "0.02 to 0.09", "0.02 to unbounded" when high is infinite; ""
    for None."""
    if not interval:
        return ""
    low, high = interval
    top = "unbounded" if high == float("inf") else f"{high:.2f}"
    return f"{low:.2f} to {top}"
