from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Users"

    def ready(self) -> None:
        # Imported here as Django requires: models cannot be imported before the app registry is ready.
        from core import audit

        from .models import User

        # The audit log (core/audit.py): blocks and the account's powers, platform-wide (no task), so
        # only superusers read them. A sign-up is no owner action: not logged.
        audit.register(
            User,
            task_of=lambda user: None,
            include_fields=["is_blocked", "is_active", "is_staff", "is_superuser"],
            only_if=lambda user, action: action != audit.CREATE,
        )
