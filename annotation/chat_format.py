"""The chat ``messages`` format shared by red-teaming conversations and their export: how a context
becomes the system message a generative model reads."""

from __future__ import annotations

from tasks.models import Context


def context_message(cfg, context: Context | None) -> dict | None:
    """The system message that gives a model ``context``: each context field on its own paragraph,
    named by its label ("Passage: ..."); None without a context or with all its fields empty."""
    if context is None:
        return None
    data = context.data
    lines = [
        f"{field.get('label', field['name'])}: {data[field['name']]}"
        for field in cfg.context_fields
        if data.get(field["name"])
    ]
    return {"role": "system", "content": "\n\n".join(lines)} if lines else None
