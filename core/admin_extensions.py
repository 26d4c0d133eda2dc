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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.contrib import admin
from django.contrib.admin.sites import NotRegistered
from django.db import models
from django.urls import URLPattern

from core.form_fields import JSONTextField


@dataclass(frozen=True)
class ObjectTool:
    """A link in the change page's object tools: ``label``, and the admin URL name suffix (``start_round``
    for ``admin:tasks_task_start_round``) that takes the object's primary key."""

    label: str
    url_suffix: str


#: Makes extra admin URL patterns for a model admin instance: ``(model_admin) -> [path(...), ...]``.
UrlsFactory = Callable[[admin.ModelAdmin], list[URLPattern]]

#: Adds template context to a named page of a lower app: ``(request, obj, **facts) -> {name: value}``.
#: The page names its ``facts`` (``models=[...]``) and the keys its template reads; see each page.
ContextProvider = Callable[..., Mapping[str, Any]]


class ExtensibleAdmin(admin.ModelAdmin):
    """A ``ModelAdmin`` whose actions, URLs and object tools the apps above it may add to.

    ``extra_urls`` are matched before the admin's own URLs (so ``<pk>/start-round/`` is not read as a
    change page); ``object_tools`` are listed in ``context["extension_tools"]`` of the change view, for
    the change form template to show.
    """

    extra_urls: Sequence[UrlsFactory] = ()
    object_tools: Sequence[ObjectTool] = ()
    # Every JSON field of the admin refuses lone surrogates where they enter (core.form_fields).
    formfield_overrides = {models.JSONField: {"form_class": JSONTextField}}
    page_context: Mapping[str, Sequence[ContextProvider]] = {}

    def extension_context(self, page: str, request, obj, **facts) -> dict[str, Any]:
        """The context the apps above add to ``page`` (a name such as ``"start_round"``) for ``obj``:
        every provider's dict, merged in registration order (a later key wins). Empty when none."""
        context: dict[str, Any] = {}
        for provide in self.page_context.get(page, ()):
            context.update(provide(request, obj, **facts))
        return context

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
    context: Mapping[str, ContextProvider] | None = None,
    site: admin.AdminSite | None = None,
) -> None:
    """Add ``actions``, URL factories, object tools and page context providers (``{page: provider}``,
    read by ``ExtensibleAdmin.extension_context``) to the admin registered for ``model``.

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
    pages = {page: list(providers) for page, providers in model_admin.page_context.items()}
    for page, provider in (context or {}).items():
        pages.setdefault(page, []).append(provider)
    model_admin.page_context = pages


class SuperusersOnlyInIndex:
    """Mixin for a ``ModelAdmin``: its app shows in the admin index and sidebar to superusers only.

    Only the listing changes: a staff user granted the model's permissions still opens its pages by URL.
    """

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser


def hide_from_non_superusers(labels: Iterable[str], site: admin.AdminSite | None = None) -> list[str]:
    """Re-register the admins of the models ``labels`` (``"app_label.ModelName"``) so that only superusers
    see them in the index and sidebar (``SuperusersOnlyInIndex``); their pages and permissions are
    unchanged otherwise. Models that are not installed or not registered are skipped.

    Returns:
        The labels that were re-registered, in the order given.
    """
    site = site or admin.site
    done = []
    for label in labels:
        try:
            model = apps.get_model(label)
            model_admin = site.get_model_admin(model)
        except (LookupError, NotRegistered):
            continue
        if isinstance(model_admin, SuperusersOnlyInIndex):
            done.append(label)
            continue
        cls = type(model_admin)
        hidden = type(cls.__name__, (SuperusersOnlyInIndex, cls), {"__module__": cls.__module__})
        site.unregister(model)
        site.register(model, hidden)
        done.append(label)
    return done
