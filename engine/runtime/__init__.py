"""Loading and running model folders in this process: the classifier and span predictor and their cache
(``classifier.py``, ``qa_inference.py``, ``modeling.py``, ``qa_modeling.py``), preprocessing, request
batching (``batching.py``), the ONNX export, its graphs and int8 plans (``onnx_export.py``, ``onnx_graph.py``,
``int8_plans.py``, ``runtimes.py``), the vector cache, working-memory measurement and the checks of a
folder's files (``model_files.py``, ``weights.py``). It takes folder paths and runtime names, never a
``RegisteredModel`` row: the registry's ``models_registry.inference`` reads the row and calls in here.
torch and transformers are imported lazily, on a model's first load.
"""
