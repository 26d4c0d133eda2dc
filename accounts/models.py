from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    """A person on the platform: annotator, validator, task owner or model owner.

    Roles are not fields: a task owner is a user in ``Task.owners``; everyone signed in and not
    blocked may annotate and validate.
    """

    is_blocked = models.BooleanField(
        default=False, help_text="Blocked users keep their data but can no longer write examples."
    )
    # Annotator leaderboards are pseudonymous unless the person opts in to a display name.
    display_name = models.CharField(max_length=60, blank=True)
    show_display_name = models.BooleanField(
        default=False, help_text="Show the display name on annotator leaderboards instead of a pseudonym."
    )

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"

    @property
    def can_contribute(self) -> bool:
        """Whether this user may write examples, validate and register models: an active account that is
        not blocked. The one definition of that rule; anonymous visitors have no such attribute, so
        callers check ``is_authenticated`` first (``core.api.permissions.can_contribute``)."""
        return self.is_active and not self.is_blocked
