"""Red-teaming rounds for tests: the SQuAD-faithfulness config (``tasks.builtin_configs.RED_TEAM_CONFIG``) with the
real SmolLM2 as the round's target (the session fixture ``smollm2_dir``, tests/conftest.py)."""

from __future__ import annotations

import copy

from models_registry.models import RegisteredModel, RoundTarget
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Round, Task
from tasks.services import ensure_round, set_current_round

PASSAGE = "The Amazon river flows through Brazil. It is about 6,400 km long."


def make_red_team_round(
    smollm2_dir, *, slug: str = "red-team", config: dict | None = None, generation: dict | None = None
) -> Round:
    """A red-teaming task ``slug`` with round 1 current and open, its target SmolLM2 (greedy, 12 new
    tokens unless ``generation`` says otherwise)."""
    # A copy: a test that changes its task's config must not change the module's constant.
    task = Task.objects.create(slug=slug, name="Red-team", config=copy.deepcopy(config or RED_TEAM_CONFIG))
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    model = RegisteredModel.objects.create(
        task=task,
        name="smollm2",
        path=str(smollm2_dir),
        status="ready",
        generation=generation or {"max_new_tokens": 12, "temperature": 0.0},
    )
    RoundTarget.objects.create(round=round_, model=model)
    return round_


def make_passage(round_: Round, passage: str = PASSAGE, title: str = "Amazon") -> Context:
    """A context of ``round_`` with ``title`` and ``passage``."""
    return Context.objects.create(task=round_.task, round=round_, data={"title": title, "passage": passage})


def make_remote_red_team_round(
    base_url: str, *, slug: str = "red-remote", chat_model_name: str = "echo", generation: dict | None = None
) -> Round:
    """A red-teaming task ``slug`` with round 1 current and open, its target a model on the chat server at
    ``base_url`` (greedy, 16 new tokens, a 20 s timeout, unless ``generation`` adds or changes)."""
    task = Task.objects.create(slug=slug, name="Red-team", config=copy.deepcopy(RED_TEAM_CONFIG))
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    model = RegisteredModel.objects.create(
        task=task,
        name="remote",
        source=RegisteredModel.Source.CHAT_ENDPOINT,
        endpoint_url=base_url,
        chat_model_name=chat_model_name,
        status="ready",
        generation={"max_new_tokens": 16, "temperature": 0.0, "timeout": 20, **(generation or {})},
    )
    RoundTarget.objects.create(round=round_, model=model)
    return round_


def make_side_by_side_round(
    base_url: str, *, k: int = 2, names: tuple[str, ...] = ("alpha", "beta", "gamma"), slug: str = "red-sbs"
) -> Round:
    """A red-teaming task ``slug`` whose first messages are answered by ``k`` models side by side
    (``red_team.side_by_side.models``), round 1 current and open, its targets one remote model per name of
    ``names`` on the chat server at ``base_url`` (the server's model name is the registry name; greedy,
    16 new tokens)."""
    config = copy.deepcopy(RED_TEAM_CONFIG)
    config["red_team"]["side_by_side"] = {"models": k}
    task = Task.objects.create(slug=slug, name="Red-team side by side", config=config)
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    for position, name in enumerate(names):
        model = RegisteredModel.objects.create(
            task=task,
            name=name,
            source=RegisteredModel.Source.CHAT_ENDPOINT,
            endpoint_url=base_url,
            chat_model_name=name,
            status="ready",
            generation={"max_new_tokens": 16, "temperature": 0.0, "timeout": 20},
        )
        RoundTarget.objects.create(round=round_, model=model, position=position)
    return round_
