"""Template filters for rates with their intervals across people (``{% load rates %}``;
``core.clustered.ClusteredRate``)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from core.clustered import MIN_PEOPLE, WILSON_EFFECTIVE, WILSON_PEOPLE

register = template.Library()

#: Under this many people the simulated coverage of a 95% interval is about 84-91%
#: (docs/generative.md, "Intervals across people"): the page says so beside it.
FEW_PEOPLE = 30


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%" if value >= 0.01 or value == 0 else f"{value * 100:.1f}%"


class _Figures:
    """A ``ClusteredRate.as_dict`` read with the dataclass's attribute names."""

    def __init__(self, data: dict):
        self.rate, self.n, self.people = data.get("rate"), data.get("n") or 0, data.get("people") or 0
        self.interval, self.method = data.get("interval"), data.get("interval_method")
        self.effective_n = data.get("effective_sample_size") or 0


@register.filter
def across_people(rate) -> str:
    """A ``ClusteredRate``'s interval as the page writes it under the rate: "95% interval 12%–68%",
    then "30 people, effective n 82 of 120", with a starred note when the interval comes from fewer than
    ``FEW_PEOPLE`` people or from Wilson over people; "no interval (3 people)" under ``MIN_PEOPLE``; ""
    for None or no rate."""
    if isinstance(rate, dict):  # ``ClusteredRate.as_dict``, as the judges page gets it
        rate = _Figures(rate)
    if rate is None or rate.rate is None:
        return ""
    if rate.interval is None:
        return format_html(
            '<span class="muted interval" title="at least {} people are needed for an interval across '
            'people">no interval ({} {})</span>',
            MIN_PEOPLE,
            rate.people,
            "person" if rate.people == 1 else "people",
        )
    low, high = rate.interval
    notes = []
    if rate.method == WILSON_PEOPLE:
        notes.append("people do not differ here: Wilson's interval over people")
    elif rate.method == WILSON_EFFECTIVE:
        notes.append("few people with a failure, or without one: Wilson's interval on the effective sample")
    if rate.people < FEW_PEOPLE:
        notes.append(f"under {FEW_PEOPLE} people, it may be too narrow")
    return format_html(
        '<span class="muted interval" title="{}">95% interval {}–{}{}<br>{} people, effective n {} of {}'
        "</span>",
        "studentized cluster bootstrap over people (docs: Intervals across people)",
        _percent(low),
        _percent(high),
        "*" if notes else "",
        rate.people,
        f"{rate.effective_n:.0f}",
        f"{rate.n:.0f}",
    ) + (format_html('<br><span class="muted interval-note">*{}</span>', "; ".join(notes)) if notes else "")


@register.filter
def money_interval(interval) -> str:
    """``(low, high)`` of an amount as "0.02–0.09", "0.02–unbounded" when high is infinite; "" for
    None."""
    if not interval:
        return ""
    low, high = interval
    top = "unbounded" if high == float("inf") else f"{high:.2f}"
    return f"{low:.2f}–{top}"


@register.filter
def percent_text(value) -> str:
    """A fraction in [0, 1] as a whole percentage ("35%", "0.4%" under 1%); "–" for None."""
    return "–" if value is None else _percent(float(value))


@register.filter
def heat(value) -> str:
    """The background of a heat-map cell for a rate in [0, 1]: the site's red at an opacity from 0.05
    (0%) to 0.6 (100%), so that the text stays readable; "transparent" for None."""
    if value is None:
        return "transparent"
    rate = min(1.0, max(0.0, float(value)))
    return f"rgba(176, 0, 32, {0.05 + 0.55 * rate:.3f})"
