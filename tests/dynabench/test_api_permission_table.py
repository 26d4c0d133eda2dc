"""THE PERMISSION TABLE of the API (rules: core/api/permissions.py): role x endpoint x method -> status.

One parametrised test over ``ROWS``. Each row runs on the world ``build_world`` lays out, as it was
before any other row (built once per module in a transaction rolled back at its end, each row in a
savepoint of it, so a row's writes are undone before the next: ``world``):

* the hate-speech task (round 1 current, a stand-in target that answers by ``rule_label``), with two
  model-fooling pending examples written by ``annotator``: ``{example}``, served to the row's role for
  validation (claimed, as ``GET .../validations/next/`` does; not to the annotator, whose own it is, nor
  to anonymous or blocked callers, whom the queue serves nothing), and ``{unserved}``, served to nobody
  (a verdict counts only on an example served to its validator; one who may not see it gets a 404);
* ``ctx-task``, a task with a context field (``premise``), round 1 current, two contexts;
* ``retired``, an inactive task (404 everywhere).

Roles: ``anonymous`` (no credentials), ``annotator`` (author of ``{example}``), ``validator`` and
``outsider`` (signed in, own nothing), ``blocked`` (``is_blocked``), ``owner`` (owner of both active
tasks, staff), ``model_owner`` (owns a registered model of hate-speech), ``superuser``.

Statuses: 401 no credentials; 403 a write the caller may not make (blocked, not the author, their own
example); 404 objects the caller may not see. To add rows (other endpoints), append tuples to ``ROWS``
``(role, method, path, body, expected_status)``; ``path`` may use the ``{placeholders}`` of
``build_world`` and ``body`` names an entry of ``BODIES`` (or is None). A new endpoint needs rows: the
completeness test reads every route and method under ``/api/`` from the URL configuration and fails for
one the table does not cover (``NOT_IN_TABLE`` names the few left out on purpose).
"""

from __future__ import annotations

import pytest

from crowd.models import Study
from generative_bench.models import Judge, Replay
from leaderboards.models import Dataset
from models_registry.models import RegisteredModel
from tasks.models import Context, Task
from tasks.services import ensure_round, set_current_round
from tests.factories.annotation import make_example
from tests.factories.models_registry import make_stand_in
from tests.factories.validation import serve
from tests.helpers.api import client_for
from tests.helpers.fakes import rule_predict

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "annotator", "validator", "outsider", "blocked", "owner", "model_owner", "superuser")
CONTRIBUTORS = ("annotator", "validator", "outsider", "owner", "model_owner", "superuser")

CTX_CONFIG = {
    "context_fields": [{"name": "premise", "type": "string"}],
    "input_fields": [{"name": "hypothesis", "type": "string"}],
    "target_field": {
        "name": "label",
        "type": "multiclass",
        "labels": ["entailment", "neutral", "contradiction"],
    },
    "model_input_fields": ["premise", "hypothesis"],
    "model_wrong_rule": {"type": "exact_match"},
    "perf_metric": "accuracy",
}

BODIES = {
    "example": {"statement": "I hate rainy mondays 🌧", "label": "not-hateful"},
    "ctx_example": lambda w: {"context": w["context"], "hypothesis": "It rained.", "label": "neutral"},
    "verdict": {"verdict": "correct"},
    "flag": {"reason": "sent by mistake"},
    "predict": {"inputs": [{"statement": "I hate rainy mondays"}]},
    "gold": lambda w: {"example": w["example"], "verdict": "correct"},
    "study": {
        "task": "hate-speech",
        "round": 1,
        "name": "A study",
        "platform": "prolific",
        "examples_required": 2,
        "max_participants": 5,
        "completion_code": "CODE1",
        "consent_text": "I agree.",
    },
    "study_patch": {"is_open": False},
    "worker": {"listing": "allowed", "held": False},
    "turn": {"prompt": "Hello 👋"},
    "judgement": {"rubric": {"supported": "no", "helpful": "2"}, "categories": ["other"]},
    "ratings": {
        "ratings": {"A": {"score": 70, "rubric": {"supported": "yes", "helpful": "4"}}},
        "chosen": "A",
    },
    "choice": {"question": "Where?", "answer": "Paris", "negatives": ["Lyon", "Nice"]},
    "battle": {"prompt": "Which river is longest? 🌊"},
    "arena_vote": {"vote": "a"},
    "draft": {"statement": "I hate rainy mondays 🌧"},
    "suggest": {"label": "hateful"},
    "replay": lambda w: {"model": w["model"], "target_turns": "keep"},
    "chat": {"model": "hate-speech/stand-in", "messages": [{"role": "user", "content": "Hello 👋"}]},
}


def _each(roles, method, path, body, status):
    return [(role, method, path, body, status) for role in roles]


def _split(method, path, body, **by_role):
    """One row per role: ``by_role`` maps role -> status; ``default`` covers the roles not named."""
    default = by_role.pop("default")
    return [(role, method, path, body, by_role.get(role, default)) for role in ROLES]


EX = "/api/examples/{example}/"
# Red-teaming (annotation/red_team/api.py): the world's tasks are classifier tasks, so every signed-in
# contributor gets 404 (not a red-teaming task, no such conversation), before any body is read; the
# red-teaming flows themselves are tests/annotation/test_red_team_api.py.
RED_TEAM_ROWS = [
    *_split("POST", "/api/tasks/hate-speech/conversations/", None, anonymous=401, blocked=403, default=404),
    *_split("GET", "/api/conversations/{example}/", None, anonymous=401, blocked=403, default=404),
    *_split("POST", "/api/conversations/{example}/turns/", "turn", anonymous=401, blocked=403, default=404),
    *_split(
        "POST",
        "/api/conversations/{example}/judgement/",
        "judgement",
        anonymous=401,
        blocked=403,
        default=404,
    ),
    *_split(
        "POST", "/api/tasks/hate-speech/choice-items/", "choice", anonymous=401, blocked=403, default=404
    ),
    *_split(
        "POST", "/api/conversations/{example}/ratings/", "ratings", anonymous=401, blocked=403, default=404
    ),
]
# The OpenAI-compatible endpoint (models_registry/openai_compat; outside /api/, so the completeness test
# below does not ask for it): token callers list their models (none here: the world has no red-teaming
# task) and hear the 404 of a missing id for a classifier's; the model answers are
# tests/models_registry/test_openai_compat.py.
OPENAI_ROWS = [
    *_split("GET", "/v1/models", None, anonymous=401, default=200),
    *_split("GET", "/v1/models/hate-speech/stand-in", None, anonymous=401, default=404),
    *_split("POST", "/v1/chat/completions", "chat", anonymous=401, default=404),
    *_split("GET", "/v1/chat/completions", None, anonymous=401, default=405),
]
# The arena (generative_bench/arena/api.py): the world's tasks are classifier tasks and it has no battle,
# so a contributor hears 404 (no arena, no such battle) and the ranking is a 404 for everyone; the arena's
# flows are tests/generative_bench/test_arena_api.py.
ARENA_ROWS = [
    *_split("POST", "/api/tasks/hate-speech/battles/", "battle", anonymous=401, blocked=403, default=404),
    *_split("GET", "/api/battles/{example}/", None, anonymous=401, blocked=403, default=404),
    *_split("POST", "/api/battles/{example}/vote/", "arena_vote", anonymous=401, blocked=403, default=404),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/arena/ranking/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/1/side-by-side/", None, 404),
]
# Replays (generative_bench/replay/api.py): the task's owners ask (400 here: hate-speech is no red-teaming
# task), others are refused (403); a replay ({replay}, on the hate-speech round) is its task owners' only,
# anyone else hears the 404 of a missing id; the flows are tests/generative_bench/test_replay_api.py.
REPLAY_ROWS = [
    *_split(
        "POST",
        "/api/tasks/hate-speech/rounds/1/replays/",
        "replay",
        anonymous=401,
        owner=400,
        superuser=400,
        default=403,
    ),
    *_split("POST", "/api/tasks/hate-speech/rounds/7/replays/", "replay", anonymous=401, default=404),
    *_split("GET", "/api/replays/{replay}/", None, anonymous=401, owner=200, superuser=200, default=404),
    *_split(
        "GET", "/api/replays/{replay}/answers/", None, anonymous=401, owner=200, superuser=200, default=404
    ),
    *_split("GET", "/api/replays/999999/", None, anonymous=401, default=404),
]
# Judges (generative_bench/judges/api.py): the figures are public for an active red-teaming task (404 here:
# hate-speech is none, retired is inactive); {judge} (a judge row on hate-speech) is run by the task's
# owners (202, queued), refused to others who see the task (403); the flows are
# tests/generative_bench/test_judges_pages.py.
JUDGE_ROWS = [
    *_each(ROLES, "GET", "/api/tasks/hate-speech/judges/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/retired/judges/", None, 404),
    *_split("POST", "/api/judges/{judge}/run/", None, anonymous=401, owner=202, superuser=202, default=403),
    *_split("POST", "/api/judges/999999/run/", None, anonymous=401, default=404),
    # The transfer matrix and the pairwise judges (generative_bench/transfer/, pairwise/): public figures
    # of an active red-teaming task, 404 for another task or an inactive one; the flows are
    # tests/generative_bench/test_transfer_matrix.py and test_pairwise_judges.py.
    *_each(ROLES, "GET", "/api/tasks/hate-speech/transfer/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/retired/transfer/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/pairwise-judges/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/retired/pairwise-judges/", None, 404),
]
# Uncertainty mode's live confidence and the annotation assistant (annotation/confidence.py,
# annotation/assistant/): the world's hate-speech task is in neither mode, so a contributor's probe and
# ask are a 400 saying so; the arm is null; a round's arms are its owners' (200 with none).
MODE_ROWS = [
    *_split("POST", "/api/tasks/hate-speech/confidence/", "draft", anonymous=401, blocked=403, default=400),
    *_split("GET", "/api/tasks/hate-speech/arm/", None, anonymous=401, blocked=403, default=200),
    *_split(
        "POST", "/api/tasks/hate-speech/suggestions/", "suggest", anonymous=401, blocked=403, default=400
    ),
    *_split(
        "GET",
        "/api/tasks/hate-speech/rounds/1/arms/",
        None,
        anonymous=401,
        owner=200,
        superuser=200,
        default=403,
    ),
]
ROWS: list[tuple[str, str, str, str | None, int]] = [
    *RED_TEAM_ROWS,
    *MODE_ROWS,
    *REPLAY_ROWS,
    *JUDGE_ROWS,
    *ARENA_ROWS,
    *OPENAI_ROWS,
    # the API's root: public, as its schema
    *_each(ROLES, "GET", "/api/", None, 200),
    # tasks and rounds: public reads
    *_each(ROLES, "GET", "/api/tasks/", None, 200),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/", None, 200),
    *_each(ROLES, "GET", "/api/tasks/retired/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/no-such-task/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/", None, 200),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/1/", None, 200),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/7/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/retired/rounds/", None, 404),
    *_split("DELETE", "/api/tasks/hate-speech/", None, default=405),
    *_split("POST", "/api/tasks/", None, default=405),
    # contexts: contributors only
    *_split("GET", "/api/tasks/ctx-task/contexts/next/", None, anonymous=401, blocked=403, default=200),
    *_split("GET", "/api/tasks/hate-speech/contexts/next/", None, anonymous=401, blocked=403, default=404),
    # a task's workers (qualification): task owners only
    *_split(
        "GET", "/api/tasks/hate-speech/workers/", None, anonymous=401, owner=200, superuser=200, default=403
    ),
    *_split("GET", "/api/tasks/retired/workers/", None, anonymous=401, default=404),
    *[
        row
        for method in ("GET", "PUT", "PATCH")
        for row in _split(
            method,
            "/api/tasks/hate-speech/workers/annotator/",
            None if method == "GET" else "worker",
            anonymous=401,
            owner=200,
            superuser=200,
            default=403,
        )
    ],
    *_split(
        "PATCH",
        "/api/tasks/hate-speech/workers/nobody/",
        "worker",
        anonymous=401,
        owner=404,
        superuser=404,
        default=403,
    ),
    # examples
    *_split("POST", "/api/tasks/hate-speech/examples/", "example", anonymous=401, blocked=403, default=201),
    *_split("POST", "/api/tasks/ctx-task/examples/", "ctx_example", anonymous=401, blocked=403, default=201),
    *_split("POST", "/api/tasks/retired/examples/", "example", anonymous=401, blocked=403, default=404),
    *_split("GET", "/api/tasks/hate-speech/examples/", None, anonymous=401, default=200),
    *_split("GET", EX, None, anonymous=401, annotator=200, owner=200, superuser=200, default=404),
    *_split("DELETE", EX, None, anonymous=401, default=405),
    *_split(
        "POST", EX + "retract/", None, anonymous=401, annotator=200, owner=403, superuser=403, default=404
    ),
    *_split(
        "POST", EX + "flag/", "flag", anonymous=401, annotator=200, owner=403, superuser=403, default=404
    ),
    *_split("GET", EX + "retract/", None, anonymous=401, default=405),
    *_split("POST", "/api/examples/999999/retract/", None, anonymous=401, default=404),
    # validation
    *_split("GET", "/api/tasks/hate-speech/validations/next/", None, anonymous=401, blocked=403, default=200),
    *_split(
        "GET",
        "/api/tasks/hate-speech/validations/next/?round=5",
        None,
        anonymous=401,
        blocked=403,
        default=404,
    ),
    *_split("POST", EX + "validations/", "verdict", anonymous=401, blocked=403, annotator=403, default=201),
    # Not served to them and not theirs to see: the 404 of a missing id (no oracle of pending ids).
    *_split(
        "POST",
        "/api/examples/{unserved}/validations/",
        "verdict",
        anonymous=401,
        validator=404,
        outsider=404,
        model_owner=404,
        default=403,
    ),
    *_split("POST", "/api/examples/999999/validations/", "verdict", anonymous=401, blocked=403, default=404),
    *_split("GET", EX + "validations/", None, anonymous=401, blocked=403, default=405),
    # Undo: nobody has a verdict on {example} in the world, so whoever may see it hears nothing_to_undo.
    *_split("DELETE", EX + "validations/mine/", None, anonymous=401, blocked=403, default=409),
    *_split(
        "DELETE", "/api/examples/999999/validations/mine/", None, anonymous=401, blocked=403, default=404
    ),
    # gold items, gold accuracy and per-person agreement: task owners only
    *_split(
        "GET", "/api/tasks/hate-speech/gold/", None, anonymous=401, owner=200, superuser=200, default=403
    ),
    *_split(
        "POST", "/api/tasks/hate-speech/gold/", "gold", anonymous=401, owner=201, superuser=201, default=403
    ),
    *_split(
        "DELETE",
        "/api/tasks/hate-speech/gold/999999/",
        None,
        anonymous=401,
        owner=404,
        superuser=404,
        default=403,
    ),
    *_split(
        "GET",
        "/api/tasks/hate-speech/gold/accuracy/",
        None,
        anonymous=401,
        owner=200,
        superuser=200,
        default=403,
    ),
    *_split(
        "GET",
        "/api/tasks/hate-speech/rounds/1/agreement/",
        None,
        anonymous=401,
        owner=200,
        superuser=200,
        default=403,
    ),
    *_split("GET", "/api/tasks/retired/gold/", None, anonymous=401, default=404),
    # models (H4): published cards public; an unpublished one for its owner, task owners, superusers
    *_each(ROLES, "GET", "/api/models/", None, 200),
    *_each(ROLES, "GET", "/api/models/{model}/", None, 200),
    *_split("GET", "/api/models/{draft}/", None, model_owner=200, owner=200, superuser=200, default=404),
    *_split("GET", "/api/models/999999/", None, default=404),
    *_split("POST", "/api/models/", None, anonymous=401, blocked=403, default=400),  # empty upload form
    *_split("DELETE", "/api/models/{model}/", None, anonymous=401, default=405),
    *_split("POST", "/api/models/{model}/predict/", "predict", anonymous=401, default=200),
    *_split(
        "POST",
        "/api/models/{draft}/predict/",
        "predict",
        anonymous=401,
        model_owner=200,
        owner=200,
        superuser=200,
        default=404,
    ),
    # leaderboard, datasets, export (H4)
    *_each(ROLES, "GET", "/api/tasks/hate-speech/leaderboard/", None, 200),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/leaderboard/?metric_weights=perf:x", None, 400),
    # The generative leaderboard is a red-teaming task's: the world's classifier task has none.
    *_each(ROLES, "GET", "/api/tasks/hate-speech/leaderboard/generative/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/retired/leaderboard/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/annotators/", None, 200),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/annotators/?round=7", None, 400),
    # the cycle matrix: public reads of an active task
    *_each(ROLES, "GET", "/api/tasks/hate-speech/cycle/", None, 200),
    *_each(ROLES, "GET", "/api/tasks/retired/cycle/", None, 404),
    *_each(ROLES, "GET", "/api/datasets/", None, 200),
    *_each(ROLES, "GET", "/api/datasets/{scoring_dataset}/", None, 200),
    *_split("GET", "/api/datasets/{hidden_dataset}/", None, owner=200, superuser=200, default=404),
    *_split(
        "GET", "/api/tasks/hate-speech/export/", None, anonymous=401, owner=200, superuser=200, default=403
    ),
    *_split("GET", "/api/tasks/retired/export/", None, anonymous=401, default=404),
    # crowd studies: the studies of the caller's tasks (an empty list for others); another's answers 404
    *_split("GET", "/api/studies/", None, anonymous=401, default=200),
    *_split("POST", "/api/studies/", "study", anonymous=401, owner=201, superuser=201, default=403),
    *_split("GET", "/api/studies/{study}/", None, anonymous=401, owner=200, superuser=200, default=404),
    *_split("PUT", "/api/studies/{study}/", "study", anonymous=401, owner=200, superuser=200, default=404),
    *_split(
        "PATCH", "/api/studies/{study}/", "study_patch", anonymous=401, owner=200, superuser=200, default=404
    ),
    # round releases: public reads while the task is active (an inactive one's for its owners); owners
    # release (409 here: round 1 has nothing validated yet)
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/1/releases/", None, 200),
    *_split("GET", "/api/tasks/retired/rounds/1/releases/", None, superuser=200, default=404),
    *_split(
        "POST",
        "/api/tasks/hate-speech/rounds/1/releases/",
        None,
        anonymous=401,
        owner=409,
        superuser=409,
        default=403,
    ),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/1/releases/1/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/1/releases/1/files/train.jsonl", None, 404),
    # a round's artefact probes: public reads of an active task's round
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/1/probes/", None, 200),
    *_each(ROLES, "GET", "/api/tasks/hate-speech/rounds/9/probes/", None, 404),
    *_each(ROLES, "GET", "/api/tasks/retired/rounds/1/probes/", None, 404),
]


def build_world() -> dict:
    """Users of every role and the objects the rows' paths refer to (see the module's docstring);
    returns ``{"users": ..., ids, "example_object": the example to serve}``."""
    from django.contrib.auth import get_user_model

    from tasks.services import ensure_builtin_task

    def user(name, **extra):
        return get_user_model().objects.create_user(username=name, password="pw-for-tests-only", **extra)

    users = {
        "anonymous": None,
        "annotator": user("annotator"),
        "validator": user("validator"),
        "outsider": user("outsider"),
        "blocked": user("blocked", is_blocked=True),
        "owner": user("owner", is_staff=True),
        "model_owner": user("model_owner"),
        "superuser": user("root", is_staff=True, is_superuser=True),
    }
    hate = ensure_builtin_task("hate-speech")
    round_ = ensure_round(task=hate, number=1)
    set_current_round(task=hate, round_=round_)
    hate.owners.add(users["owner"])
    model = make_stand_in(hate, round_)
    model.owner = users["model_owner"]
    model.save(update_fields=["owner"])
    example = make_example(round_, users["annotator"], model_wrong=True)
    unserved = make_example(round_, users["annotator"], model_wrong=True)

    ctx = Task.objects.create(slug="ctx-task", name="Context task", config=CTX_CONFIG)
    ctx.owners.add(users["owner"])
    ctx_round = ensure_round(task=ctx, number=1)
    set_current_round(task=ctx, round_=ctx_round)
    context = Context.objects.create(task=ctx, round=ctx_round, data={"premise": "It rained all day."})
    Context.objects.create(task=ctx, round=ctx_round, data={"premise": "The sun shone."})

    draft = RegisteredModel.objects.create(
        task=hate, name="draft", owner=users["model_owner"], status="ready", is_published=False
    )
    scoring = Dataset.objects.create(
        task=hate, slug="r1-test", name="R1 test", kind="round", access="scoring"
    )
    hidden = Dataset.objects.create(
        task=hate, slug="r1-train", name="R1 train", kind="round", access="hidden"
    )

    study = Study.objects.create(
        round=round_, name="Study", platform="prolific", examples_required=1, max_participants=5,
        completion_code="CODE0", consent_text="I agree.",
    )  # fmt: skip
    retired = Task.objects.create(slug="retired", name="Retired", config=hate.config, is_active=False)
    retired_round = ensure_round(task=retired, number=1)
    set_current_round(task=retired, round_=retired_round)
    replay = Replay.objects.create(round=round_, model=model)
    judge = Judge.objects.create(task=hate, model=model, name="Judge", prompt_template="{output} {rubric}")
    return {
        "users": users,
        "example_object": example,
        "example": example.pk,
        "unserved": unserved.pk,
        "context": context.pk,
        "model": model.pk,
        "draft": draft.pk,
        "scoring_dataset": scoring.pk,
        "hidden_dataset": hidden.pk,
        "study": study.public_id,
        "replay": replay.pk,
        "judge": judge.pk,
    }


def _row_id(row) -> str:
    role, method, path, _body, status = row
    return f"{role}-{method}-{path}-{status}"


@pytest.fixture(scope="module")
def shared_world(django_db_setup, django_db_blocker):
    """``build_world`` once for the module, inside a transaction rolled back when the module ends. Each
    row's own transaction (pytest-django's, as Django's ``TestCase``) is then a savepoint of it, rolled
    back after the row: every row sees the world as built, as in a fresh database, without building it
    873 times (about 60 ms each)."""
    from django.db import transaction

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            built = build_world()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    yield built
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        outer.__exit__(None, None, None)


@pytest.fixture
def world(shared_world, request, monkeypatch) -> dict:
    """The shared world for one row: the stand-in target answering by ``rule_label``, and ``{example}``
    served to the row's role (see the module's docstring)."""
    from models_registry import inference

    role = request.node.callspec.params["row"][0]
    monkeypatch.setattr(inference, "predict", rule_predict)
    if role in CONTRIBUTORS and role != "annotator":
        serve(shared_world["example_object"], shared_world["users"][role])
    return shared_world


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_permission_table(row, world):
    role, method, path, body_name, expected = row
    client = client_for(world["users"][role])
    body = BODIES[body_name] if body_name else None
    if callable(body):
        body = body(world)
    url = path.format(**world)
    response = (
        getattr(client, method.lower())(url, body, format="json")
        if body is not None
        else getattr(client, method.lower())(url)
    )
    assert response.status_code == expected, (role, method, url, response.content[:300])
    if not getattr(response, "streaming", False):  # the export streams JSONL; everything else is JSON
        assert response["Content-Type"].startswith("application/json"), response["Content-Type"]


# Routes under /api/ that the table leaves out, with why. Everything else the URL configuration serves
# must have rows, so a new endpoint (or a new method on an old one) without rows fails the test below.
NOT_IN_TABLE = {
    "api/schema/": "the OpenAPI document (public YAML, not a JSON resource): test_api_contract.py reads it",
    "api/docs/": "the Swagger UI page of that document (public HTML)",
    "api/^": "the catch-all JSON 404 for paths no route matches; it guards no object",
}
IGNORED_METHODS = {"HEAD", "OPTIONS"}  # answered by Django and DRF for every view alike


def _url_patterns(patterns, prefix=""):
    """(route, pattern) of every URL pattern under ``patterns``, includes and DRF routers walked."""
    from django.urls import URLResolver

    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _url_patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern


def _methods(callback) -> set[str] | None:
    """HTTP methods the view serves (a DRF viewset's actions, an APIView's handlers); None if unknown."""
    actions = getattr(callback, "actions", None)
    if actions:
        return {method.upper() for method in actions} - IGNORED_METHODS
    view = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if view is None:
        return None
    return {m.upper() for m in view.http_method_names if hasattr(view, m)} - IGNORED_METHODS


def served_api_endpoints() -> set[tuple[str, str]]:
    """(route, method) of every endpoint the URL configuration serves under ``api/``."""
    from django.urls import get_resolver

    served = set()
    api_routes = [(r, p) for r, p in _url_patterns(get_resolver().url_patterns) if r.startswith("api/")]
    stale = set(NOT_IN_TABLE) - {route for route, _ in api_routes}
    assert not stale, f"NOT_IN_TABLE names routes the API no longer has: {stale}"
    for route, pattern in api_routes:
        if route in NOT_IN_TABLE:
            continue
        methods = _methods(pattern.callback)
        assert methods is not None, f"{route}: a view whose methods are unknown; add rows or NOT_IN_TABLE"
        served |= {(route, method) for method in methods}
    return served


def _route_of(path: str) -> str:
    """The URL configuration's route that serves a row's path (placeholders filled with an id)."""
    from collections import defaultdict

    from django.urls import resolve

    return resolve(path.split("?")[0].format_map(defaultdict(lambda: "1"))).route


def test_table_covers_every_role_for_every_endpoint_the_api_serves():
    """Every (route, method) the URL configuration serves under /api/ has rows in the table, and each
    (method, path) of the rows is listed for all roles, so no endpoint and no role is forgotten."""
    in_table = {(_route_of(path), method) for _role, method, path, _body, _status in ROWS}
    missing_endpoints = served_api_endpoints() - in_table
    assert not missing_endpoints, f"API endpoints with no row in the permission table: {missing_endpoints}"

    by_endpoint: dict[tuple[str, str], set[str]] = {}
    for role, method, path, _body, _status in ROWS:
        by_endpoint.setdefault((method, path), set()).add(role)
    missing = {k: set(ROLES) - v for k, v in by_endpoint.items() if set(ROLES) - v}
    assert not missing
