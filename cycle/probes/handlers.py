"""Receivers that queue a round's artefact probes when it stops collecting (connected in
``LeaderboardsConfig.ready()``).

* ``tasks.signals.round_ended``: ``tasks.services.close_round`` closed the round, or
  ``set_current_round`` made another round current while it was open (the admin's "Close the selected
  rounds", "Start the next round", the demo's set-up);
* ``post_save`` of ``Round`` saved closed by a whole-row save (the Round admin's form, which closes a
  round without the service), when the round has no probe yet. A service saves named fields
  (``update_fields``) and sends ``round_ended`` itself, so it is not queued twice.

The job runs after the sending transaction commits (``services.request_round_probes``).
"""

from __future__ import annotations

from ..models import ArtefactProbe
from .services import request_round_probes


def on_round_ended(sender, round, **kwargs) -> None:  # noqa: A002 (the signal's argument)
    """A round stopped collecting: queue its artefact probes."""
    request_round_probes(round_id=round.pk)


def on_round_saved(sender, instance, created=False, update_fields=None, raw=False, **kwargs) -> None:
    """A round saved closed by its admin form, never probed yet: queue its artefact probes."""
    if created or raw or update_fields is not None or not instance.is_closed:
        return
    if not ArtefactProbe.objects.filter(round_id=instance.pk).exists():
        request_round_probes(round_id=instance.pk)
