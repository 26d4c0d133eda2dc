"""Admin for accounts, and the search behind the Task admin's owner picker.

The owner picker (``tasks.admin.TaskAdmin.autocomplete_fields``) asks this admin's autocomplete for
accounts by what was typed. Superusers and staff with the user permissions search every account by
username, name or e-mail. A task owner without those permissions may use the picker too, and only it:
they search active staff accounts (owners work in the admin, so they are staff) by username, at least
two characters, and get each account's id and username, never its e-mail; the user list itself stays
closed to them. Anyone not staff is sent to the admin's login page before this code runs.

It also keeps the internals out of the admin index and sidebar of everyone but superusers: the job
queue's tables (Django Q), groups, API tokens and e-mail address records (``INTERNAL_MODELS``,
``core.admin_extensions.hide_from_non_superusers``; the audit log likewise, in ``tasks/admin.py``).
Django imports this module after those apps' admins: they come first in ``INSTALLED_APPS``.
"""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from core.admin_extensions import hide_from_non_superusers

from .models import User

#: Admin models listed in the index and sidebar for superusers only (their pages still open by URL for
#: staff granted their permissions).
INTERNAL_MODELS = (
    "django_q.Schedule",
    "django_q.Success",
    "django_q.Failure",
    "django_q.OrmQ",
    "auth.Group",
    "authtoken.TokenProxy",
    "account.EmailAddress",
)

#: The autocomplete request of the Task admin's owner picker: ``(app_label, model_name, field_name)``.
OWNER_PICKER = ("tasks", "task", "owners")

#: Characters a task owner types before the owner picker answers (no listing of every account).
OWNER_PICKER_MIN_TERM = 2


@admin.register(User)
class DynabenchUserAdmin(UserAdmin):
    list_display = ("username", "email", "is_staff", "is_blocked", "date_joined")
    list_filter = ("is_staff", "is_superuser", "is_blocked", "is_active")
    fieldsets = (*UserAdmin.fieldsets, ("Platform", {"fields": ("is_blocked",)}))
    search_fields = ("username", "first_name", "last_name", "email")

    def _sees_accounts(self, request) -> bool:
        """Superusers and staff granted the user permissions (the stock admin's rule)."""
        return super().has_view_permission(request)

    def _is_owner_picker(self, request) -> bool:
        """The request is the owner picker's search, by an active staff user who owns a task."""
        match = getattr(request, "resolver_match", None)
        if match is None or match.url_name != "autocomplete":
            return False
        asked = tuple(request.GET.get(key, "") for key in ("app_label", "model_name", "field_name"))
        user = request.user
        return (
            asked == OWNER_PICKER
            and user.is_active
            and user.is_staff
            and user.owned_tasks.exists()  # tasks sit above accounts: the reverse relation, no import
        )

    def has_view_permission(self, request, obj=None):
        if super().has_view_permission(request, obj):
            return True
        return obj is None and self._is_owner_picker(request)

    def get_search_fields(self, request):
        if self._sees_accounts(request):
            return self.search_fields
        return ("username",)

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if self._sees_accounts(request):
            return qs
        return qs.filter(is_active=True, is_staff=True)

    def get_search_results(self, request, queryset, search_term):
        if not self._sees_accounts(request) and len(search_term.strip()) < OWNER_PICKER_MIN_TERM:
            return queryset.none(), False
        return super().get_search_results(request, queryset, search_term)


hide_from_non_superusers(INTERNAL_MODELS)
