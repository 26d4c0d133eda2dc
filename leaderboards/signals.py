"""Signal receivers that start evaluations: a model becoming ready, a dataset being created.

Connected in ``LeaderboardsConfig.ready()``, which imports this module once the models are loaded. ``models_registry`` must not import this app, so the
registry knows nothing of evaluation: we listen to its ``post_save``. Everything runs after the
saving transaction commits (``transaction.on_commit``), so a rolled-back registration or import
queues nothing and the jobs see the committed rows (a dataset's items are inserted in the same
transaction as the dataset).
"""

from __future__ import annotations

from django.db import transaction

from models_registry.models import RegisteredModel

from .models import Dataset
from .scheduling import request_evaluations


def model_saved(sender, instance, **kwargs) -> None:
    """A ``RegisteredModel`` saved with status ``ready``: request its missing evaluations."""
    if instance.status != instance.Status.READY:
        return
    model_id = instance.pk

    def request() -> None:

        model = RegisteredModel.objects.filter(pk=model_id, status=RegisteredModel.Status.READY).first()
        if model is not None:
            request_evaluations(model=model)

    transaction.on_commit(request)


def dataset_saved(sender, instance, created: bool = False, **kwargs) -> None:
    """A new scoring or standard dataset: request every ready model's evaluation on it.

    Perturbed copies are evaluated with their source dataset; hidden datasets (round train splits) are
    not evaluated automatically (``selectors.evaluable_datasets``), only on an owner's explicit request.
    """
    if not created or instance.kind == instance.Kind.PERTURBED or instance.access == instance.Access.HIDDEN:
        return
    dataset_id = instance.pk

    def request() -> None:

        dataset = Dataset.objects.filter(pk=dataset_id).first()
        if dataset is not None:
            request_evaluations(dataset=dataset)

    transaction.on_commit(request)
