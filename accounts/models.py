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

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"
