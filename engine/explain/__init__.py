"""Explanations of a registered model's prediction: token attributions by integrated gradients
(``attributions.py``), on a copy of the served classifier, cached per model, text and target.
"""
