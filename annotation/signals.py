"""Signals the annotation services send, for the apps above (docs/architecture.md, "Reaching up without
an import"). Sent synchronously inside the service's transaction, after the rows are written: a receiver
that writes rows of its own commits or rolls back with the example. Receivers connect in their
``AppConfig.ready()`` (``crowd`` pays examples from them).

* ``example_created(sender=Example, example=Example)``: ``services.create_example`` stored a new example
  (not sent for a resubmission under the same form token).
* ``example_retracted(sender=Example, example=Example)``: ``services.retract_example`` retracted it (once:
  not sent when it was already retracted).
"""

from django.dispatch import Signal

example_created = Signal()
example_retracted = Signal()
