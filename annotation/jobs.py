"""django-q2 jobs of the annotation app."""

from __future__ import annotations

from . import predictions

#: Registered by ``AnnotationConfig.ready()``: ``retry_failed_predictions_job`` every 2 minutes.
RETRY_SCHEDULE = "retry failed predictions"


def retry_failed_predictions_job() -> dict:
    """Score examples whose target model failed when they were written (on the ``RETRY_SCHEDULE``).

    Returns the counts of ``predictions.retry_failed_predictions``: examples, completed, still_failed.
    """
    return predictions.retry_failed_predictions()
