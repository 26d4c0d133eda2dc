"""The audit log: who changed what, when, with the values before and after (django-auditlog).

Each app registers its own owner-level models in its ``AppConfig.ready()`` with ``register`` below,
naming the fields worth logging (never heartbeats, counters or ``updated_at``) and how to find the
task an entry belongs to. Every entry then carries ``additional_data = {"task_id": <int or null>, ...}``
so the admin shows task owners the entries of their own tasks only (``TaskScopedLogEntryAdmin``).

Who the actor is:

* a web request (admin pages and the API): ``AuditMiddleware`` reads ``request.user`` when an entry is
  written, not when the request comes in, so an API call authenticated by its token in the view (after
  every middleware) is logged with the token's user;
* a management command: the ``OperatorCommand`` base class gives every command ``--actor <username>``
  (else the ``DYNABENCH_OPERATOR`` environment variable); the entries of the run name that user, and
  record ``{"operator": {"command": ..., "os_user": ...}}`` in ``additional_data`` either way, so a run
  without a named user still says who ran it;
* code that runs as someone (a job for a user): ``acting_as(user)``.

A write that bypasses model signals (a queryset ``update()``, as when an owner verdict settles an
example) is logged explicitly with ``record_change``.

Entry shape (``auditlog.models.LogEntry``): ``action`` 0 create, 1 update, 2 delete; ``changes`` is
``{field: [before, after]}`` with JSON values (``AUDITLOG_STORE_JSON_CHANGES``); ``actor`` the user or
null; ``timestamp`` when (UTC); ``remote_addr`` the client's address (``DYNABENCH_TRUSTED_PROXY_COUNT``
hops from the right of ``X-Forwarded-For`` behind proxies, else the socket's peer).
"""

from __future__ import annotations

import contextlib
import getpass
import os
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from auditlog.admin import LogEntryAdmin
from auditlog.context import set_actor
from auditlog.middleware import AuditlogMiddleware
from auditlog.models import LogEntry
from auditlog.registry import auditlog
from auditlog.signals import pre_log
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import models
from django.db.models.signals import pre_save
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.functional import SimpleLazyObject

#: The environment variable naming the operator of management commands run without ``--actor``.
OPERATOR_ENV = "DYNABENCH_OPERATOR"

#: ``model -> (task_of, only_if)``: how to find an instance's task id, and which instances to log.
_REGISTERED: dict[
    type[models.Model], tuple[Callable[[Any], int | None], Callable[[Any, int], bool] | None]
] = {}

#: What the current management command adds to its entries' ``additional_data`` (``{"operator": ...}``).
_operator: ContextVar[dict[str, Any] | None] = ContextVar("dynabench_audit_operator", default=None)


# --- registration -----------------------------------------------------------------------------------


def register(
    model: type[models.Model],
    *,
    task_of: Callable[[Any], int | None],
    include_fields: Iterable[str] | None = None,
    exclude_fields: Iterable[str] | None = None,
    m2m_fields: Iterable[str] | None = None,
    only_if: Callable[[Any, int], bool] | None = None,
) -> None:
    """Log creations, changes and deletions of ``model`` (call it from the model's own app's ``ready()``).

    ``task_of(instance)`` gives the id of the task the entry belongs to (``None`` for a platform-wide
    row such as a user's block); ``include_fields`` (default: every column) less ``exclude_fields``
    are the fields whose changes make an entry (an update touching none of them writes nothing); ``m2m_fields`` logs additions and
    removals (e.g. a task's owners); ``only_if(instance, action)`` false skips the entry (only owner
    verdicts, not every vote; not a user's sign-up), ``action`` being ``LogEntry.Action.CREATE``,
    ``UPDATE`` or ``DELETE``. Registering a model twice replaces its earlier registration.
    """
    _REGISTERED[model] = (task_of, only_if)
    excluded = set(exclude_fields or [])
    # Only the model's own columns by default: auditlog would otherwise diff reverse relations too.
    fields = list(include_fields or [f.name for f in model._meta.concrete_fields if f.name not in excluded])
    auditlog.register(model, include_fields=fields, m2m_fields=set(m2m_fields or []))


CREATE = LogEntry.Action.CREATE

#: ``(model, pk as text, task id)`` of the instance whose entry is being written (set by ``pre_log``).
_pending: ContextVar[tuple[type, str, int | None] | None] = ContextVar(
    "dynabench_audit_pending", default=None
)


def _task_id_of(instance) -> int | None:
    task_of, _ = _REGISTERED.get(type(instance), (None, None))
    return task_of(instance) if task_of is not None else None


def _additional_data(task_id: int | None, existing: dict | None = None) -> dict[str, Any]:
    data = dict(existing or {})
    data["task_id"] = task_id
    operator = _operator.get()
    if operator:
        data["operator"] = operator
    return data


def _before_entry(sender, instance, action, **kwargs):
    """``pre_log`` (an instance's change is about to be logged): False (no entry) when its registration's
    ``only_if`` refuses it; else note its task id for ``_stamp_entry``, from the instance itself (a
    deleted row can no longer be read back)."""
    _, only_if = _REGISTERED.get(sender, (None, None))
    if only_if is not None and not only_if(instance, action):
        return False
    _pending.set((sender, str(instance.pk), _task_id_of(instance)))
    return None


def _stamp_entry(sender, instance, raw=False, **kwargs):
    """``pre_save`` of ``LogEntry``: ``additional_data`` gets the entry's ``task_id`` (and a command's
    operator). From ``_before_entry`` for the instance being logged; for an entry auditlog writes without
    ``pre_log`` (a many-to-many change, e.g. a task's owners) from the object's row."""
    if raw or instance.pk is not None or "task_id" in (instance.additional_data or {}):
        return
    model = instance.content_type.model_class()
    if model not in _REGISTERED:
        return
    pending = _pending.get()
    if pending is not None and pending[0] is model and pending[1] == str(instance.object_pk):
        task_id = pending[2]
    else:
        obj = model._default_manager.filter(pk=instance.object_pk).first()
        task_id = _task_id_of(obj) if obj is not None else None
    instance.additional_data = _additional_data(task_id, instance.additional_data)


pre_log.connect(_before_entry, dispatch_uid="core.audit.before_entry")
pre_save.connect(_stamp_entry, sender=LogEntry, dispatch_uid="core.audit.stamp_entry")


def record_change(
    instance: models.Model, *, changes: dict[str, tuple[Any, Any]], task_id: int | None
) -> LogEntry:
    """Write an update entry for a change made without model signals (a queryset ``update()``).

    ``changes`` is ``{field: (before, after)}`` with JSON-serialisable values; the actor is the current
    one (request, command or ``acting_as``), as for any other entry.
    """
    return LogEntry.objects.log_create(
        instance,
        action=LogEntry.Action.UPDATE,
        changes={field: [before, after] for field, (before, after) in changes.items()},
        additional_data=_additional_data(task_id),
        force_log=True,
    )


# --- the actor ------------------------------------------------------------------------------------


@contextlib.contextmanager
def acting_as(user) -> Iterator[None]:
    """Entries written inside the block name ``user`` as their actor (a job run for someone)."""
    with set_actor(user):
        yield


def _authenticated_user(request):
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None


class AuditMiddleware(AuditlogMiddleware):
    """django-auditlog's middleware with two changes.

    The actor is read from ``request.user`` when the request's first entry is written: DRF
    authenticates an API token inside the view (after every middleware) and then sets the Django
    request's ``user`` to the token's user, so reading it at the start would log the API's writes as
    anonymous. And the client address follows ``DYNABENCH_TRUSTED_PROXY_COUNT`` as allauth's does
    (``X-Forwarded-For`` is anyone's to forge when no proxy appends to it).
    """

    @staticmethod
    def _get_actor(request):
        return SimpleLazyObject(lambda: _authenticated_user(request))

    @staticmethod
    def _get_remote_addr(request):
        hops = settings.ALLAUTH_TRUSTED_PROXY_COUNT
        forwarded = [a.strip() for a in request.headers.get("X-Forwarded-For", "").split(",") if a.strip()]
        if hops and len(forwarded) >= hops:
            return forwarded[-hops]
        return request.META.get("REMOTE_ADDR")


def operator_os_user() -> str:
    """The OS account running this process (``getpass.getuser``), or ``uid <n>`` when it has no name."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"


@contextlib.contextmanager
def operator(username: str | None, *, command: str) -> Iterator[Any]:
    """Run a management command's writes as the operator ``username`` (else ``$DYNABENCH_OPERATOR``).

    Every entry written inside records ``{"operator": {"command", "os_user", "username"}}``; with a
    username, that user is the entries' actor. Yields the user (or None).

    Raises:
        CommandError: no user has that username.
    """
    username = (username or os.environ.get(OPERATOR_ENV, "")).strip() or None
    user = None
    if username is not None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"--actor / {OPERATOR_ENV}: there is no user named {username!r}.")
    token = _operator.set({"command": command, "os_user": operator_os_user(), "username": username or ""})
    try:
        if user is None:
            yield None
        else:
            with set_actor(user):
                yield user
    finally:
        _operator.reset(token)


class OperatorCommand(BaseCommand):
    """Base of the management commands that change owner-level state: each takes ``--actor <username>``
    and runs inside ``operator(...)``, so the audit log says who ran it (docstring of this module)."""

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument(
            "--actor",
            default=None,
            help=f"Username recorded as the actor in the audit log (default: ${OPERATOR_ENV}, else none).",
        )
        return parser

    #: The user named by ``--actor`` / ``$DYNABENCH_OPERATOR`` while ``handle`` runs, else None.
    actor = None

    def execute(self, *args, **options):
        command = type(self).__module__.rsplit(".", 1)[-1]
        with operator(options.pop("actor", None), command=command) as user:
            self.actor = user
            return super().execute(*args, **options)


# --- the admin ------------------------------------------------------------------------------------


class TaskFilter(admin.SimpleListFilter):
    """The entries of one task (``?task=<id>``), among the tasks the user may read."""

    title = "task"
    parameter_name = "task"

    def lookups(self, request, model_admin):
        return model_admin.task_choices(request)

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(additional_data__task_id=int(value)) if value.isdigit() else queryset.none()


class TaskScopedLogEntryAdmin(LogEntryAdmin):
    """The audit log, read-only; superusers (and staff with ``auditlog.view_logentry``) see every entry,
    a task owner the entries of the tasks they own. Subclasses say which tasks a user owns."""

    list_filter = [TaskFilter, *LogEntryAdmin.list_filter]
    list_display = [*LogEntryAdmin.list_display, "task_id"]

    def owned_task_ids(self, request) -> set[int]:
        raise NotImplementedError

    def task_choices(self, request) -> list[tuple[int, str]]:
        raise NotImplementedError

    def _sees_all(self, request) -> bool:
        return request.user.is_superuser or request.user.has_perm("auditlog.view_logentry")

    def _is_owner(self, request) -> bool:
        return request.user.is_active and request.user.is_staff and bool(self.owned_task_ids(request))

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if self._sees_all(request):
            return qs
        return qs.filter(additional_data__task_id__in=sorted(self.owned_task_ids(request)))

    def has_module_permission(self, request):
        return super().has_module_permission(request) or self._is_owner(request)

    def has_view_permission(self, request, obj=None):
        if super().has_view_permission(request, obj):
            return True
        if obj is None:
            return self._is_owner(request)
        return self._is_owner(request) and (obj.additional_data or {}).get("task_id") in self.owned_task_ids(
            request
        )

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="Task")
    def task_id(self, obj) -> int | None:
        return (obj.additional_data or {}).get("task_id")


def task_log_urls(model_admin) -> list:
    """Admin URL factory (``extend_admin(Task, urls=[...])``): ``<pk>/audit-log/`` redirects to the
    audit log filtered to that task, for anyone who may view the task."""
    info = model_admin.opts.app_label, model_admin.opts.model_name

    def view(request, object_id):
        # The Task admin's queryset holds only the tasks this user may see (an owner's own): 404 otherwise.
        task = get_object_or_404(model_admin.get_queryset(request), pk=object_id)
        return HttpResponseRedirect(f"{reverse('admin:auditlog_logentry_changelist')}?task={task.pk}")

    return [
        path(
            "<int:object_id>/audit-log/",
            model_admin.admin_site.admin_view(view),
            name=f"{info[0]}_{info[1]}_audit_log",
        )
    ]
