"""The admin of generative benchmarking: each sub-package registers its own models."""

from .arena import admin as arena_admin  # noqa: F401
from .judges import admin as judges_admin  # noqa: F401
from .pairwise import admin as pairwise_admin  # noqa: F401
from .replay import admin as replay_admin  # noqa: F401
