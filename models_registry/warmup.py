"""What a web worker process does when it starts (called from ``gunicorn.conf.py``'s
``post_worker_init``): set torch's thread count for the process, load the open rounds' target
models in the background so that the first annotators do not wait for a cold load, and take what
was loaded out of the garbage collector's sight (``freeze_loaded_objects``).
"""

from __future__ import annotations

import gc
import logging
import os
import threading

from django.conf import settings
from django.db import close_old_connections, connections

from engine.runtime.classifier import get_classifier
from engine.runtime.generative import get_chat_model
from engine.runtime.model_files import InferenceError
from engine.runtime.slots import GENERATION_SLOTS, waiting_bound, web_slots
from models_registry.kinds import chat_models
from models_registry.models import RegisteredModel
from models_registry.selectors import open_round_targets

logger = logging.getLogger(__name__)


def torch_threads_per_process(processes: int, cores: int | None = None) -> int:
    """Intra-op threads for each of ``processes`` processes sharing ``cores`` CPU cores (default: the
    cores this process may run on): ``max(1, cores // processes)``, so the web workers together do not
    run more torch threads than there are cores (oversubscribed, every forward gets slower)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0))
    return max(1, cores // max(1, processes))


def freeze_loaded_objects() -> int:
    """Move every object tracked by Python's cyclic garbage collector so far (Django, torch,
    transformers, the loaded models: about 310,000 objects in a web worker) to its permanent
    generation (``gc.freeze``), and return how many there are now.

    Why: a full collection walks every tracked object while holding the interpreter lock, so each of
    the worker's request threads stopped for its length, 140-180 ms here (and several times that on
    busy cores), every time enough new objects had piled up to trigger one; under a crowd that was
    the longest request of a run (docs/serving.md, "Where the time went"). The objects loaded at start
    live as long as the process, so there is nothing in them to collect. Objects made later, by
    requests, are collected as before. Called when the worker starts and again once its targets are
    loaded; calling it again only adds what was made since.
    """
    gc.freeze()
    return gc.get_freeze_count()


def preload_open_round_targets() -> list[str]:
    """Load (into this process's model cache) every open round's local target model.

    Returns:
        The names (``<task slug>/<model name>``) loaded; a target that fails to load is logged and
        skipped (its examples get a failed prediction as usual), never raised.
    """
    loaded = []
    try:
        for model in open_round_targets():
            if model.source in (RegisteredModel.Source.ENDPOINT, RegisteredModel.Source.CHAT_ENDPOINT):
                continue
            try:
                if chat_models(model.task.cfg):  # a chat model (models_registry/generative.py)
                    get_chat_model(model.path, name=model.name)
                else:
                    get_classifier(model.path, allow_pickle=model.allow_pickle, runtime=model.runtime)
            except InferenceError as exc:
                logger.warning("preload of %s/%s failed: %s", model.task.slug, model.name, exc)
                continue
            loaded.append(f"{model.task.slug}/{model.name}")
    finally:
        # This runs on a thread of its own: its database connection would otherwise stay open.
        connections.close_all()
    frozen = freeze_loaded_objects()
    logger.info(
        "preloaded %s target model(s): %s; %s objects frozen",
        len(loaded),
        ", ".join(loaded) or "none",
        frozen,
    )
    return loaded


def prepare_web_worker(
    *, processes: int, threads: int, threads_leave_pool: bool = False
) -> threading.Thread | None:
    """Set torch's threads for a web worker (one of ``processes`` on this machine, serving with
    ``threads`` request threads), size its generation slots and bound its line for one by its threads
    (``runtime.slots.web_slots`` and ``waiting_bound``, ``DYNABENCH_GENERATION_SLOTS`` and
    ``DYNABENCH_GENERATION_QUEUE``; ``threads_leave_pool``: a request's thread leaves the server's pool
    as it joins the line, ``core.request_threads``) and, unless
    ``DYNABENCH_PRELOAD_TARGETS`` is off, start ``preload_open_round_targets`` on a daemon thread
    (returned; None when not started), and ``freeze_loaded_objects`` before and after the load. The
    worker serves meanwhile: a request for a model still loading waits for that one load
    (``get_classifier``'s per-path lock)."""
    import torch  # deferred: only web workers pay for importing torch at start

    torch.set_num_threads(torch_threads_per_process(processes))
    GENERATION_SLOTS.size = web_slots(
        threads, settings.DYNABENCH_GENERATION_SLOTS, threads_leave_pool=threads_leave_pool
    )
    GENERATION_SLOTS.max_waiting = waiting_bound(
        threads,
        GENERATION_SLOTS.size,
        settings.DYNABENCH_GENERATION_QUEUE,
        threads_leave_pool=threads_leave_pool,
    )
    logger.info(
        "generation slots: %s at once, at most %s waiting (sized for %s request threads)",
        GENERATION_SLOTS.size,
        GENERATION_SLOTS.max_waiting,
        threads,
    )
    close_old_connections()
    freeze_loaded_objects()
    if not settings.DYNABENCH_PRELOAD_TARGETS:
        return None
    thread = threading.Thread(target=preload_open_round_targets, name="preload-targets", daemon=True)
    thread.start()
    return thread
