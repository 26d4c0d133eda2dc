from tests.tiny_models import tiny_backbone_dir, tiny_model_dir  # noqa: F401
from tests.tiny_qa import (  # noqa: F401
    qa_contexts,
    qa_round,
    qa_task,
    tiny_qa_model_dir,
    tiny_qa_registered_model,
)
