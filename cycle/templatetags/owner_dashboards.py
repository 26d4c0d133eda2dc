"""``{% dashboard_tasks user as tasks %}``: the tasks whose dashboard ``user`` may open (all for a
superuser, else the ones they own), by name; for the admin index (``cycle/admin/index.html``)."""

from __future__ import annotations

from django import template

from tasks.models import Task

register = template.Library()


@register.simple_tag
def dashboard_tasks(user) -> list[Task]:
    """One query; an empty list for an anonymous user."""
    if not user.is_authenticated:
        return []
    tasks = Task.objects.all() if user.is_superuser else Task.objects.filter(owners=user)
    return list(tasks.order_by("name"))
