"""Signals the tasks services send, for the apps above (docs/architecture.md, "Reaching up without an
import"). Sent synchronously inside the service's transaction: a receiver's writes commit or roll back
with the change. Receivers connect in their ``AppConfig.ready()`` (``crowd`` ends a round's studies).
A rule that may refuse someone's work is no signal: it is added to ``qualification.add_contribution_rule``.

* ``round_ended(sender=Round, round=Round)``: a round stopped collecting examples:
  ``services.close_round`` closed it (not sent when it was closed already), or
  ``services.set_current_round`` made another round the task's current one while it was open.
  ``models_registry.round_targets.start_next_round`` does both, in its one transaction.
"""

from django.dispatch import Signal

round_ended = Signal()
