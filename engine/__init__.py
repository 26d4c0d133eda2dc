"""The model engine: plain Python that loads, runs, batches, trains and explains models, and calls remote
chat servers. It imports no Django and no app (import-linter keeps it so); the settings it reads are
handed to it by ``engine.config.configure`` when the registry app starts, and the apps reach it only
through the registry's front door, ``models_registry.serving`` (docs/architecture.md).

Sub-packages: ``runtime`` (loading, inference, batching, generation, ONNX), ``endpoints`` (remote calls
and the address rule), ``training`` (recipes), ``explain`` (attributions)."""
