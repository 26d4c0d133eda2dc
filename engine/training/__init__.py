"""Training target models on the texts, labels or spans it is handed, never on database rows:
classifiers (``classifier.py``, the ``quick`` and ``finetune`` recipes) and extractive-QA span models
(``qa.py``). The training loop that reads rounds and registers the result lives above, in
``cycle/training/``. Imports no Django model.
"""
