"""The API contract: schemathesis against ``/api/schema/`` on a live server.

Every operation of the served OpenAPI schema gets ``MAX_EXAMPLES`` generated requests (hypothesis,
derandomised, no deadline), the schema's own examples first. Each request is sent by a role drawn from
the task's owner, an annotator and anonymous (token authentication), and half of them have their path parameters replaced by seeded
objects (the hate-speech task, round 1, a ready tiny model, an example, a scoring and a hidden dataset)
so that handlers run past the 404. A response fails the contract when it is a 5xx
(``not_a_server_error``), or when its status is documented and its body or content type does not
match the schema (``response_schema_conformance``, ``content_type_conformance``).

All failures of all operations are collected and reported together, so one run names every
operation that breaks the contract.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

MAX_EXAMPLES = 15
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
SETTINGS = hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
)


@pytest.fixture
def world(hate_task, hate_round, tiny_registered_model, owner, annotator, validator):
    """Seeded objects whose ids replace generated path parameters, and a token per role."""
    from rest_framework.authtoken.models import Token

    from annotation.services import create_example
    from leaderboards.models import Dataset, Score

    example, _ = create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "I love my neighbours 🌈"}, target="hateful"
    )
    scoring = Dataset.objects.create(
        task=hate_task, slug="r1-test", name="R1 test", kind="round", access="scoring", round=hate_round
    )
    hidden = Dataset.objects.create(
        task=hate_task, slug="r1-train", name="R1 train", kind="round", access="hidden"
    )
    Score.objects.create(
        model=tiny_registered_model,
        dataset=scoring,
        status=Score.Status.DONE,
        perf=0.5,
        metrics={"throughput": 100.0, "memory": 0.1, "fairness": 0.9, "robustness": 0.8},
    )
    return {
        "ids": {
            "examples": example.pk,
            "models": tiny_registered_model.pk,
            "datasets": [scoring.pk, hidden.pk],
        },
        "headers": [
            {"Authorization": f"Token {Token.objects.create(user=owner).key}"},
            {"Authorization": f"Token {Token.objects.create(user=annotator).key}"},
            {},
        ],
    }


def real_path_parameters(path: str, names: list[str], ids: dict, draw) -> dict:
    """Seeded values for the path parameters of ``path`` (``slug``, ``number``, ``id``)."""
    values: dict = {}
    for name in names:
        if name == "slug":
            values[name] = "hate-speech"
        elif name == "number":
            values[name] = 1
        elif name == "id":
            collection = path.strip("/").split("/")[1]  # /api/<collection>/{id}/...
            value = ids.get(collection, 1)
            values[name] = draw(st.sampled_from(value)) if isinstance(value, list) else value
    return values


def run_operation(operation, base_url: str, world: dict, failures: list[str]) -> Counter:
    """Send ``MAX_EXAMPLES`` generated requests to one operation; append each failure's description.

    Returns:
        How many responses of each status the operation gave (printed with ``pytest -s``).
    """
    statuses: Counter = Counter()
    path_names = [p.name for p in operation.path_parameters]
    seen: set[str] = set()

    # The schema's own examples (e.g. a predict body with real field names) first, then generated cases.
    explicit = operation.schema.get_strategies_from_examples(operation)
    cases = st.one_of(*explicit, operation.as_strategy())

    @SETTINGS
    @hypothesis.given(case=cases, data=st.data())
    def check(case, data):
        # sampled_from leans to its first element, so most requests use the seeded objects and the owner.
        if path_names and data.draw(st.sampled_from([True, True, False]), label="seeded path"):
            case.path_parameters = {
                **(case.path_parameters or {}),
                **real_path_parameters(operation.path, path_names, world["ids"], data.draw),
            }
        headers = data.draw(st.sampled_from(world["headers"]), label="role")
        try:
            response = case.call(base_url=base_url, headers=headers)
            statuses[response.status_code] += 1
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (AssertionError, FailureGroup, requests.RequestException) as exc:
            text = f"{operation.method.upper()} {operation.path}: {type(exc).__name__}: {str(exc)[:1500]}"
            key = text.split("\n")[0][:200]
            if key not in seen:  # one line per distinct failure, not one per example
                seen.add(key)
                failures.append(text)

    check()
    return statuses


def served_schema(live_server) -> dict:
    response = requests.get(f"{live_server.url}/api/schema/?format=json", timeout=30)
    assert response.status_code == 200
    return response.json()


@pytest.mark.django_db(transaction=True)
def test_every_operation_keeps_the_contract(live_server, world):
    schema = schemathesis.openapi.from_dict(served_schema(live_server))
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 8
    failures: list[str] = []
    for operation in operations:
        statuses = run_operation(operation, live_server.url, world, failures)
        print(f"{operation.method.upper():5} {operation.path:45} {dict(sorted(statuses.items()))}")
    assert not failures, f"{len(failures)} contract failure(s):\n\n" + "\n\n".join(failures)


@pytest.mark.django_db(transaction=True)
def test_a_response_that_breaks_the_schema_is_reported(live_server, world):
    """The harness itself: a schema that promises a field the server never sends yields a failure."""
    document = served_schema(live_server)
    document["components"]["schemas"]["Dataset"]["required"].append("promised_but_missing")
    document["components"]["schemas"]["Dataset"]["properties"]["promised_but_missing"] = {"type": "string"}
    schema = schemathesis.openapi.from_dict(document)
    [operation] = [r.ok() for r in schema.get_all_operations() if r.ok().path == "/api/datasets/{id}/"]
    failures: list[str] = []
    run_operation(operation, live_server.url, world, failures)
    assert failures and "promised_but_missing" in failures[0]


def readme_client() -> str:
    """The Python client example of docs/api.md (its first ```python block)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)]


def nli_predict(model, inputs: list[dict]) -> list[dict]:
    """A stand-in NLI target that always answers 'entailment' (so the example of docs/api.md fools it)."""
    probabilities = {"entailment": 0.8, "neutral": 0.1, "contradiction": 0.1}
    return [{"label": "entailment", "probabilities": dict(probabilities)} for _ in inputs]


@pytest.mark.django_db(transaction=True)
def test_the_readme_client_runs_against_a_live_server(
    live_server, monkeypatch, annotator, validator, tmp_path
):
    """The client of docs/api.md: a context, a model-fooling example, its validation by another user, a leaderboard."""
    from rest_framework.authtoken.models import Token

    from models_registry import inference
    from tasks.models import Context
    from tasks.services import ensure_builtin_task, ensure_round, set_current_round
    from tests.factories.models_registry import make_stand_in

    task = ensure_builtin_task("nli")
    round_ = ensure_round(task=task, number=1)
    set_current_round(task=task, round_=round_)
    Context.objects.create(task=task, round=round_, data={"premise": "Ships sail at dawn. 🚢"})
    monkeypatch.setattr(inference, "predict", nli_predict)
    make_stand_in(task, round_, name="nli-stand-in")
    script = tmp_path / "client.py"
    script.write_text(readme_client(), encoding="utf-8")
    env = {
        **os.environ,
        "DYNABENCH_URL": live_server.url,
        "DYNABENCH_TOKEN": Token.objects.create(user=annotator).key,
        "DYNABENCH_VALIDATOR_TOKEN": Token.objects.create(user=validator).key,
    }
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0] == "Natural language inference: round 1, labels ['entailment', 'neutral', 'contradiction']"
    ), lines
    assert "premise: Ships sail at dawn. 🚢" in lines
    assert any(line.endswith("model fooled = True") for line in lines), lines
    assert "  nli-stand-in said entailment" in lines
    validated = [line for line in lines if line.startswith("validated example ")]
    assert validated and validated[0].endswith(": now pending"), lines  # 1 of the quorum of 3
    assert "left out of the Dynascore: none" in lines
