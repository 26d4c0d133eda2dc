"""Template filters of the judges page: fractions as percentages, kappas and their intervals."""

from __future__ import annotations

from django import template

from core.agreement import ONE_LABEL

register = template.Library()


@register.filter
def percent(value) -> str:
    """A fraction in [0, 1] as a whole percentage ("62%"); "–" for None."""
    if value is None:
        return "–"
    return f"{round(float(value) * 100)}%"


@register.filter
def kappa(value) -> str:
    """A kappa with two decimals and a true minus sign ("0.62", "−0.10"); "–" for None."""
    if value is None:
        return "–"
    return f"{float(value):.2f}".replace("-", "−")


@register.filter
def agreement_kappa(agreement: dict, missing: str = "not measured") -> str:
    """The kappa of an agreement dict (``judges.presenting``) as the page writes it: ``kappa``'s text
    ("0.62"); "undefined (one label on both sides)" when both sides gave every item one label (kappa
    0/0, ``core.agreement.ONE_LABEL``); ``missing`` when there is no item."""
    if agreement.get("kappa") is not None:
        return kappa(agreement["kappa"])
    if agreement.get("kappa_undefined") == ONE_LABEL:
        return f"undefined ({ONE_LABEL})"
    return missing


@register.filter
def kappa_interval(interval) -> str:
    """``[low, high]`` of a kappa as "0.41 to 0.80"; "" for None."""
    if not interval:
        return ""
    return f"{kappa(interval[0])} to {kappa(interval[1])}"


@register.filter
def percent_interval(interval) -> str:
    """``[low, high]`` of a fraction as "71% to 92%"; "" for None."""
    if not interval:
        return ""
    return f"{percent(interval[0])} to {percent(interval[1])}"
