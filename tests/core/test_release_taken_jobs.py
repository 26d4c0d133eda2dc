"""Jobs a killed cluster had taken on the ORM broker are released at the demo's start instead of staying
locked for Q_CLUSTER["retry"] seconds (core.job_queue.release_taken_jobs)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import OrmQ

from core.job_queue import release_taken_jobs


@pytest.mark.django_db
def test_locked_jobs_become_available_and_free_ones_are_left_alone():
    now = timezone.now()
    taken = OrmQ.objects.create(key="dynabench", payload="x", lock=now + timedelta(seconds=3690))
    free = OrmQ.objects.create(key="dynabench", payload="y", lock=now - timedelta(seconds=5))
    assert release_taken_jobs() == 1
    taken.refresh_from_db()
    free.refresh_from_db()
    assert now <= taken.lock <= timezone.now()
    assert free.lock == now - timedelta(seconds=5)
    # What django-q2's ORM broker hands out: lock before now.
    assert set(OrmQ.objects.filter(lock__lt=timezone.now()).values_list("payload", flat=True)) == {"x", "y"}
