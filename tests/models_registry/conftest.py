"""Fixtures of this folder: the tiny classifier ones from tests/tiny_models.py."""

from tests.tiny_models import tiny_backbone_dir, tiny_model_dir, tiny_registered_model  # noqa: F401
