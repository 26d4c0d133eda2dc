"""django-q2 job functions of generative benchmarking (arguments are primary keys): each sub-package's
jobs, re-exported so a queued job's dotted path is ``generative_bench.jobs.<name>``."""

from .arena.jobs import measure_leak_job  # noqa: F401
from .judges.jobs import run_judge_job  # noqa: F401
from .pairwise.jobs import run_pairwise_judge_job  # noqa: F401
from .replay.jobs import run_replay_job  # noqa: F401
