"""The model registry: registered models and round targets, and the apps' one door to the model engine.

The package holds the registry's records (``models.py``: ``RegisteredModel``, ``RoundTarget``), writes
(``services.py``, ``round_targets.py``), reads (``selectors.py``), the admin, the API, the checks run at
registration (``checking/``, ``check_sweep.py``, ``hub.py``, ``archives.py``), ``inference.predict``
and ``generative.py`` (where a local and a remote model differ, decided once), and ``serving.py``, the
front door through which every app above calls a model. The engine itself (loading, running, remote
calls, training, attributions) is the top-level ``engine`` package, plain Python without Django
(docs/architecture.md, "The model engine").
"""
