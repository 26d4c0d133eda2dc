"""django-q2 jobs of the annotation app."""

from __future__ import annotations

from . import predictions


def retry_failed_predictions_job() -> dict:
    """Score examples whose target model failed when they were written (scheduled in the demo).

    Returns the counts of ``predictions.retry_failed_predictions``: examples, completed, still_failed.
    """
    return predictions.retry_failed_predictions()
