"""Template filters for text users wrote (``{% load text %}``)."""

from __future__ import annotations

from django import template

from core.text_rules import truncate_graphemes

register = template.Library()


@register.filter(name="truncate_graphemes")
def truncate_graphemes_filter(value, limit) -> str:
    """``{{ text|truncate_graphemes:80 }}``: ``text_rules.truncate_graphemes``, for ``truncatechars``
    on text users wrote (a bad ``limit`` leaves the text whole, as ``truncatechars`` does)."""
    try:
        limit = int(limit)
    except (TypeError, ValueError):
        return value
    return truncate_graphemes(str(value), limit)
