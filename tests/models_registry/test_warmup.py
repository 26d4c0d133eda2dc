"""A web worker's start (models_registry/warmup.py): torch threads shared out among the workers, and the
open rounds' local targets loaded into the process's cache in the background."""

from __future__ import annotations

import gc
import os

import pytest

from engine.runtime.classifier import cached_paths
from engine.runtime.slots import GENERATION_SLOTS
from models_registry.warmup import preload_open_round_targets, prepare_web_worker, torch_threads_per_process


@pytest.mark.parametrize(
    ("processes", "cores", "threads"),
    [(2, 2, 1), (3, 2, 1), (1, 2, 2), (2, 8, 4), (3, 8, 2), (0, 4, 4), (16, 4, 1)],
)
def test_threads_per_process_share_the_cores(processes, cores, threads):
    assert torch_threads_per_process(processes, cores) == threads


@pytest.mark.django_db(transaction=True)
def test_preload_loads_open_round_targets_and_skips_broken_ones(tiny_registered_model, make_model):
    from models_registry.round_targets import set_round_targets

    broken = make_model("gone", path="/nonexistent/model")
    set_round_targets(
        round=tiny_registered_model.round_targets.get().round, models=[tiny_registered_model, broken]
    )
    assert preload_open_round_targets() == [f"hate-speech/{tiny_registered_model.name}"]
    assert cached_paths() == [str(tiny_model_path(tiny_registered_model))]


def tiny_model_path(model):
    from pathlib import Path

    return Path(model.path).resolve()


@pytest.fixture
def unbounded_line_after():
    """The process's line for a generation slot unbounded again, and its one slot back, after the test
    (as in any process that is not a web server); and torch's thread count as it was, which
    ``prepare_web_worker`` sets for the whole process."""
    import torch

    threads = torch.get_num_threads()
    yield
    GENERATION_SLOTS.max_waiting, GENERATION_SLOTS.size = None, 1
    torch.set_num_threads(threads)


@pytest.mark.django_db(transaction=True)
def test_prepare_web_worker_sets_torch_threads_and_preloads(
    settings, tiny_registered_model, unbounded_line_after
):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)  # not 1 already (a test worker may run one thread: tests/conftest.py)
    try:
        thread = prepare_web_worker(processes=64, threads=4)
        assert torch.get_num_threads() == 1
        thread.join(timeout=60)
        assert len(cached_paths()) == 1
        settings.DYNABENCH_PRELOAD_TARGETS = False
        assert prepare_web_worker(processes=1, threads=4) is None
    finally:
        torch.set_num_threads(before)


@pytest.mark.django_db(transaction=True)
def test_prepare_web_worker_bounds_the_line_for_a_generation_slot(settings, unbounded_line_after):
    settings.DYNABENCH_PRELOAD_TARGETS = False
    assert GENERATION_SLOTS.size == 1 and GENERATION_SLOTS.max_waiting is None
    # A server of 8 threads whose answers hold them: half answer (decoded together), half serve pages.
    prepare_web_worker(processes=1, threads=8)
    assert (GENERATION_SLOTS.size, GENERATION_SLOTS.max_waiting) == (4, 0)
    prepare_web_worker(processes=4, threads=4)  # a gunicorn worker: 2 answer, 2 for pages
    assert (GENERATION_SLOTS.size, GENERATION_SLOTS.max_waiting) == (2, 0)
    settings.DYNABENCH_GENERATION_QUEUE = 6
    prepare_web_worker(processes=1, threads=8)
    assert (GENERATION_SLOTS.size, GENERATION_SLOTS.max_waiting) == (4, 6)
    # Configured slots are taken as given; the line then keeps half the threads for pages.
    settings.DYNABENCH_GENERATION_SLOTS, settings.DYNABENCH_GENERATION_QUEUE = 1, None
    prepare_web_worker(processes=1, threads=8)  # 8 - 1 slot - 4 kept for pages
    assert (GENERATION_SLOTS.size, GENERATION_SLOTS.max_waiting) == (1, 3)
    # The demo's server, whose answers leave its pool: a batch of 8 answers and 3 batches' worth waiting.
    settings.DYNABENCH_GENERATION_SLOTS = None
    prepare_web_worker(processes=1, threads=8, threads_leave_pool=True)
    assert (GENERATION_SLOTS.size, GENERATION_SLOTS.max_waiting) == (8, 24)


@pytest.mark.django_db(transaction=True)
def test_prepare_web_worker_freezes_what_was_loaded(tiny_registered_model, unbounded_line_after):
    """What the worker holds when it has started, its loaded target included, is out of the cyclic
    collector's sight: a full collection no longer walks it (and stops every request thread meanwhile)."""
    gc.unfreeze()
    tracked_at_start = len(gc.get_objects())
    try:
        thread = prepare_web_worker(processes=1, threads=8)
        thread.join(timeout=60)
        assert len(cached_paths()) == 1
        # Everything tracked before the load, and what the load made, is frozen; only objects made after
        # the second freeze (this test's own) are still tracked.
        assert gc.get_freeze_count() >= tracked_at_start
        assert len(gc.get_objects()) < tracked_at_start / 20
    finally:
        gc.unfreeze()


def test_this_test_worker_runs_torch_and_its_other_threads_on_its_share():
    """Under pytest-xdist every thread of the worker that runs torch (a batcher's, say) takes the share,
    not only the main thread: OMP_NUM_THREADS, set by tests/conftest.py before torch was imported."""
    import threading

    import torch

    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None:  # one process: torch's own default, untouched
        assert os.environ.get("OMP_NUM_THREADS") in (None, str(torch.get_num_threads()))
        return
    expected = torch_threads_per_process(int(workers))
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    assert (torch.get_num_threads(), seen) == (expected, [expected])
