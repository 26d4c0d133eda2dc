"""Signals the validation services send, for the apps above (docs/architecture.md, "Reaching up without
an import"). Sent synchronously inside the service's transaction, while the example's row lock is held:
a receiver's rows commit or roll back with the verdict. Receivers connect in their ``AppConfig.ready()``
(``crowd`` pays validations and bonuses from them).

* ``validation_recorded(sender=Validation, validation=Validation)``: ``services.submit_validation``
  stored a verdict (ordinary or owner verdict; ``validation.is_owner_verdict`` says which).
* ``example_settled(sender=Example, example=Example, status=str, previous=str)``: the example's status
  moved from ``previous`` to ``status``: settled by quorum or owner verdict (``previous`` "pending"), or an
  owner overturned a settled example (``services.overturn_verdict``; ``previous`` a settled status).
  ``example`` is the locked row as read before the change; read ``status``, not ``example.status``.
* ``verdict_undone(sender=Validation | GoldAnswer, instance=row)``: ``verdict_undo.undo_verdict`` is
  about to delete the validator's vote or gold answer ``instance`` (its ``pk`` still set).
"""

from django.dispatch import Signal

validation_recorded = Signal()
example_settled = Signal()
verdict_undone = Signal()
