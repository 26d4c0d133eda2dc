"""The ``ask_user`` model-wrong rule: the author says whether the model got their example wrong.

With ``ask_user`` (docs/domain.md, "Model-wrong rules") the server cannot compare the model's answer with the
target, so an example is stored with ``model_wrong=None`` and its author, shown the model's answer on
the outcome page, answers once. Only the author, only for an ``ask_user`` task, only once the model
answered: the verdict is still decided on the server's terms, never posted with the example itself.
"""

from __future__ import annotations

from django.db import transaction

from .models import Example, Prediction
from .services import ExampleError


def awaits_user_verdict(example: Example) -> bool:
    """True when the example's task uses ``ask_user`` and its author has not answered yet."""
    return (
        example.round.task.cfg.model_wrong_rule == "ask_user"
        and example.model_wrong is None
        and example.prediction_status == Example.PredictionStatus.OK
        and not example.is_retracted
    )


@transaction.atomic
def record_user_verdict(*, example: Example, user, model_wrong: bool) -> Example:
    """Store the author's answer to "did the model get it wrong?" on the example and its predictions.

    Idempotent for the same answer; a different second answer is refused (the first may already
    count in MER and have sent the example to validation).

    Args:
        example: the example (of a task whose rule is ``ask_user``).
        user: the requester; must be its author.
        model_wrong: True when the author says the model was wrong (fooled).

    Returns:
        The updated example.

    Raises:
        ExampleError: not the author, a task with another rule, a retracted example, no model answer
            yet (the model failed or the round has no target), or an answer already given that differs.
    """
    if not getattr(user, "is_authenticated", False) or example.annotator_id != user.pk:
        raise ExampleError("Only the author of an example can say whether the model was wrong.")
    locked = Example.objects.select_for_update().select_related("round__task").get(pk=example.pk)
    if locked.round.task.cfg.model_wrong_rule != "ask_user":
        raise ExampleError("This task decides whether the model was wrong by itself.")
    if locked.is_retracted:
        raise ExampleError("This example is retracted.")
    if locked.prediction_status != Example.PredictionStatus.OK:
        raise ExampleError("The model has not answered yet; you can say whether it was wrong once it has.")
    if locked.model_wrong is not None:
        if locked.model_wrong == model_wrong:
            return locked
        raise ExampleError("You already said whether the model was wrong; that answer stands.")
    locked.model_wrong = bool(model_wrong)
    locked.save(update_fields=["model_wrong", "updated_at"])
    Prediction.objects.filter(example=locked, status=Prediction.Status.OK).update(
        model_wrong=bool(model_wrong)
    )
    return locked
