"""The django-q2 job of the artefact probes (queued by ``services.request_round_probes``).

It trains scikit-learn classifiers on the CPU, one thread, and loads no model of the registry: it takes
no generation or inference slot, and in the job cluster it runs at the workers' low priority
(``core.job_priority``), so the web and the model-serving paths keep their share of the machine.
"""

from __future__ import annotations

import logging

from tasks.models import Round

from .services import run_round_probes

logger = logging.getLogger(__name__)


def run_artefact_probes_job(round_id: int) -> str:
    """Measure and store round ``round_id``'s artefact probes (``services.run_round_probes``), replacing
    earlier ones: safe to run twice, or after a verdict changed.

    Returns:
        ``"<kind>: <status>"`` per probe, joined by ``"; "`` (e.g. ``"input_only: done; author:
        not_measurable"``), or ``"missing"`` when the round no longer exists.
    """
    round_ = Round.objects.select_related("task").filter(pk=round_id).first()
    if round_ is None:
        logger.info("artefact probes of round %s not run: the round is gone", round_id)
        return "missing"
    probes = run_round_probes(round_=round_)
    return "; ".join(f"{probe.kind}: {probe.status}" for probe in probes)
