from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from .models import User


@admin.register(User)
class DynabenchUserAdmin(UserAdmin):
    list_display = ("username", "email", "is_staff", "is_blocked", "date_joined")
    list_filter = ("is_staff", "is_superuser", "is_blocked", "is_active")
    fieldsets = (*UserAdmin.fieldsets, ("Platform", {"fields": ("is_blocked",)}))
