"""Signals the tasks services send, for the apps above (docs/architecture.md, "Reaching up without an
import"). Sent synchronously inside the service's transaction: a receiver's writes commit or roll back
with the change. Receivers connect in their ``AppConfig.ready()`` (``crowd`` ends a round's studies and
refuses the work of a crowd account without a running study).

* ``round_ended(sender=Round, round=Round)``: a round stopped collecting examples:
  ``services.close_round`` closed it (not sent when it was closed already), or
  ``services.set_current_round`` made another round the task's current one while it was open.
  ``models_registry.round_targets.start_next_round`` does both, in its one transaction.
* ``contribution_checked(sender=Task, task=Task, user=User, action=str, lock=bool, now=datetime)``:
  ``qualification.check_can_contribute`` is deciding whether ``user`` may write (``action="write"``) or
  validate (``"validate"``) on ``task``; sent for everyone but the task's owners and superusers, before
  the task's own rules. A receiver refuses by raising ``qualification.NotQualified`` with a code of its
  own (crowd's ``study``); with ``lock`` it may lock its rows (the caller's transaction stores the work).
"""

from django.dispatch import Signal

round_ended = Signal()
contribution_checked = Signal()
