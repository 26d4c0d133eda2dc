"""Extension points of a lower app's admin, filled in by the apps above it.

An app imports only what is below it (docs/architecture.md, "Layers"). Yet an admin page of a lower
app often carries the tools of a higher one: the Task admin (``tasks``) starts a round with target
models (``models_registry``), exports the examples (``annotation``) and trains the next round's target
(``leaderboards``); the Example admin (``annotation``) settles examples by owner verdict
(``validation``). The lower admin class derives from ``ExtensibleAdmin`` and knows nothing of them;
each higher app's ``admin.py`` calls ``extend_admin(Model, ...)`` at import time.

Why that works: Django's admin imports every installed app's ``admin`` module (autodiscover, in
``INSTALLED_APPS`` order, which follows the layers) while the project starts, before the URL
configuration reads ``admin.site.urls`` and before any page is served. So every extension is in place
when the admin builds its URLs and pages, and no module needs an import inside a function or a
re-registration to reach upward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.contrib import admin
from django.urls import URLPattern


@dataclass(frozen=True)
class ObjectTool:
    """A link in the change page's object tools: ``label``, and the admin URL name suffix (``start_round``
    for ``admin:tasks_task_start_round``) that takes the object's primary key."""

    label: str
    url_suffix: str


#: Makes extra admin URL patterns for a model admin instance: ``(model_admin) -> [path(...), ...]``.
UrlsFactory = Callable[[admin.ModelAdmin], list[URLPattern]]


class ExtensibleAdmin(admin.ModelAdmin):
    """A ``ModelAdmin`` whose actions, URLs and object tools the apps above it may add to.

    ``extra_urls`` are matched before the admin's own URLs (so ``<pk>/start-round/`` is not read as a
    change page); ``object_tools`` are listed in ``context["extension_tools"]`` of the change view, for
    the change form template to show.
    """

    extra_urls: Sequence[UrlsFactory] = ()
    object_tools: Sequence[ObjectTool] = ()

    def get_urls(self):
        extra = [pattern for make in self.extra_urls for pattern in make(self)]
        return [*extra, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "extension_tools": list(self.object_tools)}
        return super().change_view(request, object_id, form_url, extra_context)


def extend_admin(
    model,
    *,
    actions: Sequence = (),
    urls: Sequence[UrlsFactory] = (),
    object_tools: Sequence[ObjectTool] = (),
    site: admin.AdminSite | None = None,
) -> None:
    """Add ``actions``, URL factories and object tools to the admin registered for ``model``.

    Called from a higher app's ``admin.py`` at import time. Appends to the registered instance only,
    keeping what the lower app and earlier apps declared, in order.

    Raises:
        django.contrib.admin.sites.NotRegistered: ``model`` has no admin on ``site``.
        TypeError: its admin is not an ``ExtensibleAdmin``.
    """
    model_admin = (site or admin.site).get_model_admin(model)
    if not isinstance(model_admin, ExtensibleAdmin):
        raise TypeError(f"the admin of {model.__name__} is not an ExtensibleAdmin")
    model_admin.actions = [*(model_admin.actions or ()), *actions]
    model_admin.extra_urls = [*model_admin.extra_urls, *urls]
    model_admin.object_tools = [*model_admin.object_tools, *object_tools]
