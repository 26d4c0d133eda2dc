"""Which generative models the OpenAI-compatible endpoint serves to a caller, and their ids."""

from __future__ import annotations

from django.db.models import QuerySet

from models_registry.kinds import chat_models
from models_registry.models import RegisteredModel
from models_registry.selectors import models_visible_to, sees_real_identity

#: Sources of a local model (weights on this server); remote chat servers are not proxied.
LOCAL_SOURCES = (RegisteredModel.Source.LOCAL_DIR, RegisteredModel.Source.UPLOAD)


def model_id(model: RegisteredModel) -> str:
    """The model's id on the endpoint: ``"<task slug>/<model name>"``, e.g. ``"red-team/smollm2"``.

    Unambiguous: a slug has no ``/`` (so the id splits at its first one) and a name is unique in its
    task; stable while neither is renamed.
    """
    return f"{model.task.slug}/{model.name}"


def served_models(user) -> list[RegisteredModel]:
    """The models ``user`` may use through the endpoint, by id: ready local chat models (a
    ``save_pretrained`` folder or upload) of a red-teaming task, among those ``user`` may see
    (``models_visible_to``: published models of active tasks, and the ones they own or whose task they
    own). An anonymous model is served only to those who may see its name (``sees_real_identity``),
    since its id carries the name. Remote chat-endpoint models are never served (their key is the
    operator's, not to be lent).
    """
    return sorted(_served(user, _candidates(user)), key=model_id)


def served_model(user, wanted: str) -> RegisteredModel | None:
    """The model whose id is ``wanted`` if ``user`` may use it (``served_models``), else None: the
    same None for an id that exists but is not theirs to use as for one that does not exist."""
    slug, slash, name = wanted.partition("/")
    if not slash or not slug or not name:
        return None
    found = _served(user, _candidates(user).filter(task__slug=slug, name=name))
    return found[0] if found else None


def _candidates(user) -> QuerySet[RegisteredModel]:
    return (
        models_visible_to(user)
        .filter(
            status=RegisteredModel.Status.READY,
            source__in=LOCAL_SOURCES,
            task__config__target_field__type="generation",
        )
        .exclude(path="")
    )


def _served(user, candidates: QuerySet[RegisteredModel]) -> list[RegisteredModel]:
    # The config's own reading of "red-teaming task" has the last word over the JSON lookup above.
    return [m for m in candidates if chat_models(m.task.cfg) and sees_real_identity(user, m)]
