"""``{% model_runtime model as runtime %}``: ``runtime_facts.runtime_facts(model)`` for a template."""

from __future__ import annotations

from django import template

from models_registry.runtime_facts import runtime_facts

register = template.Library()


@register.simple_tag
def model_runtime(model) -> dict:
    """The model card's runtime block (``runtime_facts``)."""
    return runtime_facts(model)
