"""Plain helpers shared by several test folders (no fixtures here: tests/conftest.py defines those).

api: ``client_for`` (a token-authenticated APIClient) and ``forced_client`` (force_authenticate).
create_js: the create page's script (create.js) run under Node on given cases.
data: the real data folder (``settings.DYNABENCH_DATA_DIR``) and slices of its gzipped JSONL files.
fakes: stand-in ``predict`` functions (a rule, a crash) to monkeypatch into ``models_registry.inference``.
tiny_models / tiny_qa: tiny random classifiers, encoders and span models, built offline in milliseconds.
toy_data: about twenty trivially separable hate-speech texts with labels.
zips: zips in memory for upload tests.
"""
