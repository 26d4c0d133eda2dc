"""The model registry: registered models and round targets, and what serves and trains them.

The package root is the registry itself: its records (``models.py``: ``RegisteredModel``, ``RoundTarget``),
writes (``services.py``, ``round_targets.py``), reads (``selectors.py``), the admin, the API, the checks
run at registration (``checks.py``, ``check_inputs.py``, ``hub.py``, ``archives.py``), and
``inference.predict(model, inputs)``, the one call the apps above make to get a registered model's
answers. Below it, sub-packages by job, none of which imports the root: ``runtime/`` loads and runs model
folders (torch or ONNX Runtime), ``endpoints/`` calls remote models, ``training/`` trains models on data it
is handed, ``explain/`` explains a prediction. ``runtime``, ``endpoints`` and ``training`` import no Django
model, so a benchmark uses them without a database (pyproject.toml, ``[tool.importlinter]``).
"""
