from tests.annotation.fakes import crashing_model, rule_model  # noqa: F401 - fixtures
from tests.tiny_models import tiny_model_dir, tiny_registered_model  # noqa: F401 - fixtures
