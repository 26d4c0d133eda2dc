"""How many torch threads each pytest-xdist worker runs (set by tests/conftest.py)."""

from __future__ import annotations


def torch_threads_of_a_worker(workers: int, cores: int) -> int:
    """torch's intra-op (OpenMP) threads for each of ``workers`` pytest-xdist workers on ``cores`` cores:
    ``max(1, cores // workers)``, the web workers' rule (``models_registry.warmup.torch_threads_per_process``).

    Why: by default every worker runs as many OpenMP threads as the machine has cores, and so does every
    Python thread of it that runs torch (a model's batcher). With two workers on two cores, the threads
    of one spin while the other worker holds the core. The model-heavy tests alone (the flows with
    SmolLM2, the batcher, replays; two workers) took 138 s of wall time and 255 s of CPU with the
    default, 88 s and 158 s with one thread each; the whole suite, 15 min 21 s of CPU in the test
    processes against 13 min 50 s (docs/testing.md, "Where the time goes")."""
    return max(1, cores // max(1, workers))
