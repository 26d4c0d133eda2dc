"""The OpenAI-compatible endpoint (models_registry/openai_compat): the official ``openai`` client against a
live server answering with the real SmolLM2 (streamed and not, the same text as ``chat_stream`` gives),
which models a caller sees, token auth, the throttle, bad bodies and broken models, in OpenAI's error
shape."""

from __future__ import annotations

import json
import threading
import time

import openai
import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from engine.runtime.generative import AnswerStream, Decoding, Generation, get_chat_model
from models_registry.generative import chat_stream
from models_registry.models import RegisteredModel
from models_registry.openai_compat import views as openai_views
from models_registry.openai_compat.responses import StopTrimmer, completion, events
from tests.factories.accounts import UserFactory
from tests.factories.red_team import make_red_team_round

MODEL = "red-team/smollm2"
SYSTEM = "Answer in one short sentence."
AMAZON = [{"role": "user", "content": "How long is the Amazon? 🌊"}]
# A prompt SmolLM2 answers at length (it counts on past any small budget), for the disconnect test.
COUNTING = [{"role": "user", "content": "Write the numbers from 1 to 1000, one per line."}]
CHAT_URL = "/v1/chat/completions"


@pytest.fixture
def red_round(db, smollm2_dir, owner):
    """The red-teaming task ``red-team`` (owned by ``owner``) with SmolLM2 as its unpublished model,
    greedy, with a stored system prompt."""
    round_ = make_red_team_round(
        smollm2_dir, generation={"max_new_tokens": 12, "temperature": 0.0, "system_prompt": SYSTEM}
    )
    round_.task.owners.add(owner)
    return round_


@pytest.fixture
def smollm2_model(red_round) -> RegisteredModel:
    return RegisteredModel.objects.get(task=red_round.task, name="smollm2")


def bearer(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {Token.objects.get_or_create(user=user)[0].key}")
    return client


@pytest.fixture
def openai_client(live_server):
    """``openai_client(user)`` (or ``openai_client(key=...)``): the official client on the live server,
    without retries (so a 429 shows). Closed after the test: a kept-alive connection would keep its
    server thread, and that thread's database connection, open."""
    made: list[openai.OpenAI] = []

    def make(user=None, key=None) -> openai.OpenAI:
        if key is None:
            key = Token.objects.get_or_create(user=user)[0].key
        client = openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=key, max_retries=0, timeout=120)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def post(client: APIClient, body, **extra):
    return client.post(CHAT_URL, json.dumps(body), content_type="application/json", **extra)


def streamed(response) -> list:
    """The ``data:`` payloads of a streamed answer (decoded JSON, or the ``[DONE]`` text); comments dropped."""
    text = b"".join(response.streaming_content).decode()
    payloads = []
    for block in text.strip().split("\n\n"):
        if block.startswith("data: "):
            data = block[len("data: ") :]
            payloads.append(data if data == "[DONE]" else json.loads(data))
    return payloads


# --- the official client against a live server --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_openai_client_gets_what_chat_stream_gives_streamed_and_not(
    openai_client, smollm2_model, smollm2_dir, owner
):
    model = smollm2_model
    expected = chat_stream(model, AMAZON, Decoding(max_new_tokens=6, temperature=0.0)).drain()
    # The stored system prompt is read by the model: the prompt is counted with it.
    prompt_tokens = get_chat_model(smollm2_dir).count_tokens([{"role": "system", "content": SYSTEM}, *AMAZON])
    assert expected.input_tokens == prompt_tokens and expected.text and expected.output_tokens == 6
    client = openai_client(owner)

    listed = client.models.list()
    assert [(m.id, m.object, m.owned_by) for m in listed.data] == [(MODEL, "model", "red-team")]
    assert listed.data[0].created == int(model.created_at.timestamp())
    assert client.models.retrieve(MODEL).id == MODEL

    whole = client.chat.completions.create(model=MODEL, messages=AMAZON, max_tokens=6, temperature=0)
    assert (whole.object, whole.model, whole.id[:9]) == ("chat.completion", MODEL, "chatcmpl-")
    [choice] = whole.choices
    assert (choice.index, choice.message.role, choice.message.content) == (0, "assistant", expected.text)
    assert choice.finish_reason == "length"  # 6 tokens cut the sentence
    assert (whole.usage.prompt_tokens, whole.usage.completion_tokens, whole.usage.total_tokens) == (
        prompt_tokens,
        6,
        prompt_tokens + 6,
    )

    chunks = list(
        client.chat.completions.create(
            model=MODEL,
            messages=AMAZON,
            max_completion_tokens=6,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert {c.object for c in chunks} == {"chat.completion.chunk"} and len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == expected.text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-2:] == [None, "length"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 6
    assert chunks[-1].usage.prompt_tokens == prompt_tokens
    assert all(c.usage is None for c in chunks[:-1])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "content, max_tokens, whole",
    # With the stored system prompt, greedy SmolLM2 answers the first in emoji (three tokens each) and the
    # second in Arabic; the budget's last token holds the first bytes of a character (U+FFFD if decoded).
    [
        ("Reply with three emoji only: 😀🎉🌊", 5, "🌈"),
        ("ما هي عاصمة فرنسا؟ أجب بالعربية", 11, "بريبراياc ال"),
    ],
    ids=["emoji", "arabic"],
)
def test_an_answer_cut_inside_a_character_ends_before_it_streamed_and_not(
    openai_client, smollm2_model, owner, content, max_tokens, whole
):
    messages = [{"role": "user", "content": content}]
    client = openai_client(owner)
    answer = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=max_tokens)
    [choice] = answer.choices
    assert (choice.message.content, choice.finish_reason) == (whole, "length")
    assert answer.usage.completion_tokens == max_tokens  # the token held back was generated: counted
    chunks = list(
        client.chat.completions.create(
            model=MODEL,
            messages=messages,
            max_tokens=max_tokens,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert "".join(pieces) == whole and not any("\ufffd" in piece for piece in pieces)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage.completion_tokens == max_tokens


@pytest.mark.django_db(transaction=True)
def test_a_stop_sequence_is_never_streamed(openai_client, smollm2_model, owner):
    model = smollm2_model
    free = chat_stream(model, AMAZON, Decoding(max_new_tokens=8)).drain().text
    stop = " " + free.split(" ")[3]  # the fourth word, with its space: "The Amazon is a| vast..."
    cut = free[: free.index(stop)]
    assert cut and len(cut) < len(free)
    assert chat_stream(model, AMAZON, Decoding(max_new_tokens=8, stop=(stop,))).drain().text == cut
    client = openai_client(owner)
    whole = client.chat.completions.create(model=MODEL, messages=AMAZON, max_tokens=8, stop=stop)
    assert (whole.choices[0].message.content, whole.choices[0].finish_reason) == (cut, "stop")
    chunks = list(
        client.chat.completions.create(model=MODEL, messages=AMAZON, max_tokens=8, stop=[stop], stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == cut
    assert chunks[-1].choices[0].finish_reason == "stop"


@pytest.mark.django_db(transaction=True)
def test_a_client_that_leaves_stops_the_generation(openai_client, red_round, owner, monkeypatch):
    started: list = []

    def spying(model, messages, decoding=None):
        stream = chat_stream(model, messages, decoding)
        started.append(stream)
        return stream

    monkeypatch.setattr(openai_views, "chat_stream", spying)
    client = openai_client(owner)
    stream = client.chat.completions.create(model=MODEL, messages=COUNTING, max_tokens=400, stream=True)
    pieces = iter(stream)
    assert next(pieces).choices[0].delta.role == "assistant"
    assert next(pieces).choices[0].delta.content  # the answer has begun
    stream.close()
    deadline = time.monotonic() + 30
    while started[0].generation is None and time.monotonic() < deadline:
        time.sleep(0.1)
    generation = started[0].generation
    # Cut short by the client's leaving, far before its 400 tokens (a whole count would take minutes).
    assert generation is not None and generation.finish_reason == "cut_short"
    assert 0 < generation.output_tokens < 100


@pytest.mark.django_db(transaction=True)
def test_the_openai_client_raises_its_own_errors(openai_client, red_round, outsider, settings):
    # Five chat completions a minute: the sixth below is refused (the model is unpublished: 404s).
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "openai_chat": "5/min",
        },
    }
    with pytest.raises(openai.AuthenticationError) as no_key:
        openai_client(key="not-a-token").models.list()
    assert (no_key.value.status_code, no_key.value.code) == (401, "invalid_api_key")

    client = openai_client(outsider)
    assert client.models.list().data == []
    refusals = []
    for wanted in (MODEL, "red-team/no-such-model"):
        with pytest.raises(openai.NotFoundError) as missing:
            client.chat.completions.create(model=wanted, messages=AMAZON)
        refusals.append(missing.value.body)
    # The unpublished model and a missing one: the same answer but for the echoed id (no oracle).
    assert refusals[0] == {
        "message": f"The model `{MODEL}` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }
    assert refusals[1] == {
        **refusals[0],
        "message": refusals[0]["message"].replace(MODEL, "red-team/no-such-model"),
    }

    with pytest.raises(openai.BadRequestError) as several:
        client.chat.completions.create(model=MODEL, messages=AMAZON, n=2)
    assert (several.value.code, several.value.param) == ("unsupported_parameter", "n")
    # The client itself cannot send a lone surrogate: it encodes its body as strict UTF-8.
    with pytest.raises(UnicodeEncodeError):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "\ud800"}])

    for _ in range(2):  # refused requests count too (three so far): the throttle comes before the body
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model=MODEL, messages=AMAZON)
    with pytest.raises(openai.RateLimitError) as throttled:
        client.chat.completions.create(model=MODEL, messages=AMAZON)
    assert (throttled.value.status_code, throttled.value.code) == (429, "rate_limit_exceeded")
    assert 1 <= int(throttled.value.response.headers["Retry-After"]) <= 60
    assert client.models.list().data == []  # listing models is not throttled


# --- which models, for whom ---------------------------------------------------------------------------


def test_models_are_listed_to_those_who_may_see_them(
    smollm2_model, smollm2_dir, owner, annotator, outsider, make_model
):
    red_team = smollm2_model.task
    others = make_red_team_round(smollm2_dir, slug="red-team-2")
    theirs = RegisteredModel.objects.get(task=others.task)
    theirs.owner = annotator
    theirs.save(update_fields=["owner"])
    anonymous = RegisteredModel.objects.create(
        task=red_team, name="secret-anon", path=str(smollm2_dir), status="ready", is_published=True,
        is_anonymous=True,
    )  # fmt: skip
    RegisteredModel.objects.create(
        task=red_team, name="broken", path=str(smollm2_dir), status="failed", is_published=True
    )
    RegisteredModel.objects.create(
        task=red_team, name="remote", source="chat_endpoint", endpoint_url="http://127.0.0.1:9/v1",
        chat_model_name="m", status="ready", is_published=True,
    )  # fmt: skip
    make_model("hate-classifier")  # published and ready, but a classifier
    retired = make_red_team_round(smollm2_dir, slug="retired-red-team")
    retired.task.is_active = False
    retired.task.save(update_fields=["is_active"])
    RegisteredModel.objects.filter(task=retired.task).update(is_published=True)
    root = UserFactory(username="root", is_superuser=True, is_staff=True)

    def ids(user):
        response = bearer(user).get("/v1/models")
        assert response.status_code == 200 and response.json()["object"] == "list"
        return [entry["id"] for entry in response.json()["data"]]

    assert ids(owner) == ["red-team/secret-anon", MODEL]
    assert ids(annotator) == ["red-team-2/smollm2"]
    # Published, but anonymous: its id would tell its name, which only its owners may read.
    assert ids(outsider) == []
    assert ids(root) == [
        "red-team-2/smollm2",
        "red-team/secret-anon",
        MODEL,
        "retired-red-team/smollm2",
    ]
    smollm2_model.is_published = True
    smollm2_model.save(update_fields=["is_published"])
    assert ids(outsider) == [MODEL]
    assert bearer(outsider).get(f"/v1/models/{MODEL}").json() == {
        "id": MODEL,
        "object": "model",
        "created": int(smollm2_model.created_at.timestamp()),
        "owned_by": "red-team",
    }
    assert anonymous.pk and bearer(outsider).get("/v1/models/red-team/secret-anon").status_code == 404
    anonymous_answer = bearer(None).get("/v1/models")
    assert anonymous_answer.status_code == 401 and anonymous_answer["WWW-Authenticate"] == "Bearer"
    assert anonymous_answer.json()["error"]["type"] == "invalid_request_error"
    # A signed-in browser session is not a token: a page of another site cannot borrow it.
    session = APIClient()
    session.force_login(owner)
    assert session.get("/v1/models").status_code == 401
    assert session.post(CHAT_URL, {"model": MODEL, "messages": [USER]}, format="json").status_code == 401


# --- bodies -------------------------------------------------------------------------------------------

USER = {"role": "user", "content": "Hi"}
BAD_BODIES = [
    ({"model": MODEL, "messages": [USER], "n": 3}, "n", "unsupported_parameter"),
    ({"model": MODEL, "messages": [USER], "tools": [{"type": "function"}]}, "tools", "unsupported_parameter"),
    ({"model": MODEL, "messages": [USER], "logprobs": True}, "logprobs", "unsupported_parameter"),
    ({"model": MODEL, "messages": [USER], "max_token": 5}, "max_token", "unknown_parameter"),
    ({"model": MODEL, "messages": [{"role": "robot", "content": "Hi"}]}, "messages[0].role", "invalid_value"),
    (
        {"model": MODEL, "messages": [USER, {"role": "tool", "content": "42", "tool_call_id": "x"}]},
        "messages[1].tool_call_id",
        "unsupported_parameter",
    ),
    (
        {"model": MODEL, "messages": [USER, {"role": "assistant", "content": "Hello"}]},
        "messages[1].role",
        "invalid_value",
    ),
    (
        {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
        "messages[0].content[0].type",
        "unsupported_parameter",
    ),
    (
        {"model": MODEL, "messages": [{"role": "user", "content": None}]},
        "messages[0].content",
        "invalid_value",
    ),
    ({"model": MODEL, "messages": []}, "messages", "invalid_value"),
    ({"model": MODEL, "messages": "Hi"}, "messages", "invalid_type"),
    ({"messages": [USER]}, "model", "missing_required_parameter"),
    ({"model": 7, "messages": [USER]}, "model", "invalid_type"),
    ({"model": MODEL, "messages": [USER], "max_tokens": 0}, "max_tokens", "invalid_value"),
    ({"model": MODEL, "messages": [USER], "max_tokens": 4097}, "max_tokens", "invalid_value"),
    ({"model": MODEL, "messages": [USER], "max_tokens": "8"}, "max_tokens", "invalid_type"),
    ({"model": MODEL, "messages": [USER], "max_tokens": True}, "max_tokens", "invalid_type"),
    (
        {"model": MODEL, "messages": [USER], "max_tokens": 8, "max_completion_tokens": 9},
        "max_tokens",
        "invalid_value",
    ),
    ({"model": MODEL, "messages": [USER], "temperature": 2.5}, "temperature", "invalid_value"),
    ({"model": MODEL, "messages": [USER], "temperature": 10**400}, "temperature", "invalid_value"),
    ({"model": MODEL, "messages": [USER], "top_p": 1.5}, "top_p", "invalid_value"),
    ({"model": MODEL, "messages": [USER], "stop": ["a", "b", "c", "d", "e"]}, "stop", "invalid_value"),
    ({"model": MODEL, "messages": [USER], "stop": [""]}, "stop", "invalid_value"),
    ({"model": MODEL, "messages": [USER], "seed": 2**64}, "seed", "invalid_value"),
    (
        {"model": MODEL, "messages": [USER], "stream_options": {"include_usage": True}},
        "stream_options",
        "invalid_value",
    ),
    ({"model": MODEL, "messages": [USER], "stream": "yes"}, "stream", "invalid_type"),
    ([{"model": MODEL}], None, "invalid_type"),
]


@pytest.mark.parametrize(
    ("body", "param", "code"), BAD_BODIES, ids=[str(b[1]) + "-" + b[2] for b in BAD_BODIES]
)
def test_a_bad_body_is_a_400_naming_the_field(red_round, owner, body, param, code):
    response = post(bearer(owner), body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    assert error["message"]


def test_bodies_the_json_parser_refuses(red_round, owner):
    client = bearer(owner)
    escaped = b'{"model": "red-team/smollm2", "messages": [{"role": "user", "content": "a\\ud800b"}]}'
    raw = b'{"model": "red-team/smollm2", "messages": [{"role": "user", "content": "' + b'a\xed\xa0\x80b"}]}'
    for body in (escaped, raw, b"{not json", b'{"model": "x", "temperature": NaN}'):
        response = client.post(CHAT_URL, body, content_type="application/json")
        assert response.status_code == 400, body
        assert response.json()["error"]["code"] == "invalid_json"
    assert (
        "lone surrogate"
        in client.post(CHAT_URL, escaped, content_type="application/json").json()["error"]["message"]
    )
    form = client.post(CHAT_URL, "model=red-team%2Fsmollm2", content_type="application/x-www-form-urlencoded")
    assert (form.status_code, form.json()["error"]["code"]) == (415, "unsupported_media_type")


def test_errors_outside_the_views_keep_the_openai_shape(db, owner, settings):
    client = bearer(owner)
    unknown = client.get("/v1/engines")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "unknown_url")
    wrong_method = client.get(CHAT_URL)
    assert (wrong_method.status_code, wrong_method.json()["error"]["code"]) == (405, "method_not_allowed")
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    big = post(client, {"model": MODEL, "messages": [{"role": "user", "content": "x" * 200}]})
    assert big.status_code == 413
    assert big.json() == {
        "error": {
            "message": "The request body is too large: 276 bytes, at most 100 allowed.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def test_the_500_handler_answers_v1_in_the_openai_shape(rf):
    from core.server_errors import SERVER_ERROR, server_error

    try:
        raise RuntimeError("a bug in a middleware")
    except RuntimeError:
        response = server_error(rf.post(CHAT_URL))
    assert response.status_code == 500
    assert json.loads(response.content) == {
        "error": {"message": SERVER_ERROR, "type": "server_error", "param": None, "code": None}
    }


# --- answers and failures, through the test client ----------------------------------------------------


def test_emoji_and_right_to_left_text_are_answered_and_counted(smollm2_model, smollm2_dir, owner):
    messages = [
        {"role": "developer", "content": "Reply briefly.\r\n"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "מה אורך "}, {"type": "text", "text": "האמזונס? 🌊👩🏽‍🔬"}],
        },
    ]
    response = post(bearer(owner), {"model": MODEL, "messages": messages, "max_tokens": 2, "seed": 7})
    assert response.status_code == 200, response.content
    # developer is read as system (after the stored one), the text parts joined, CRLF kept as sent.
    read = [
        {"role": "system", "content": f"{SYSTEM}\n\nReply briefly.\r\n"},
        {"role": "user", "content": "מה אורך האמזונס? 🌊👩🏽‍🔬"},
    ]
    usage = response.json()["usage"]
    assert usage["prompt_tokens"] == get_chat_model(smollm2_dir).count_tokens(read)
    assert (usage["completion_tokens"], response.json()["choices"][0]["finish_reason"]) == (2, "length")


def test_a_prompt_too_long_is_a_400_before_anything_is_generated(smollm2_model, owner):
    long = {"role": "user", "content": "river " * 9000}  # about 9,000 tokens; SmolLM2 reads 8,192
    for stream in (False, True):
        response = post(
            bearer(owner), {"model": MODEL, "messages": [long], "max_tokens": 4, "stream": stream}
        )
        assert response.status_code == 400
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("context_length_exceeded", "messages")
        assert error["message"].startswith("This model's maximum context length is 8,192 tokens.")


def test_an_answer_cut_by_the_models_time_limit_ends_with_length(red_round, smollm2_dir, owner):
    RegisteredModel.objects.create(
        task=red_round.task, name="hasty", path=str(smollm2_dir), status="ready", is_published=True,
        generation={"timeout": 0.001},
    )  # fmt: skip
    response = post(bearer(owner), {"model": "red-team/hasty", "messages": [USER], "max_tokens": 50})
    assert response.status_code == 200, response.content
    [choice] = response.json()["choices"]
    assert (choice["finish_reason"], choice["message"]["content"]) == ("length", "")


def test_a_model_that_cannot_load_is_a_500_naming_no_path(red_round, owner, tmp_path):
    empty = tmp_path / "srv-secret-folder"
    empty.mkdir()
    RegisteredModel.objects.create(
        task=red_round.task, name="hollow", path=str(empty), status="ready", is_published=True
    )
    response = post(bearer(owner), {"model": "red-team/hollow", "messages": [USER]})
    assert response.status_code == 500
    assert response.json()["error"] == {
        "message": "The model failed while answering; nothing more was generated. Try again or another model.",
        "type": "server_error",
        "param": None,
        "code": "model_error",
    }
    assert b"srv-secret-folder" not in response.content


def test_a_model_that_breaks_mid_answer(smollm2_model, smollm2_dir, owner, monkeypatch):
    chat = get_chat_model(smollm2_dir)
    forward, calls = chat.model.forward, []

    def breaking(*args, **kwargs):
        # The prompt is read and four tokens decoded; the fifth decoding step fails.
        calls.append(1)
        if len(calls) % 6 == 0:
            raise RuntimeError(f"CUDA-like failure reading {smollm2_dir}/model.safetensors")
        return forward(*args, **kwargs)

    monkeypatch.setattr(chat.model, "forward", breaking)
    client = bearer(owner)
    whole = post(client, {"model": MODEL, "messages": [USER]})
    assert (whole.status_code, whole.json()["error"]["code"]) == (500, "model_error")
    assert str(smollm2_dir).encode() not in whole.content
    stream = post(client, {"model": MODEL, "messages": [USER], "stream": True})
    assert (stream.status_code, stream["Content-Type"]) == (200, "text/event-stream; charset=utf-8")
    payloads = streamed(stream)
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    # What came before the failure was streamed, then the error (and no [DONE]).
    assert payloads[1]["choices"][0]["delta"]["content"]
    assert payloads[-1]["error"]["code"] == "model_error" and "[DONE]" not in payloads
    assert str(smollm2_dir) not in json.dumps(payloads)


def test_an_unexpected_error_is_a_500_without_detail(red_round, owner, monkeypatch):
    def broken(user, wanted):
        raise RuntimeError("/srv/dynabench/secret")

    monkeypatch.setattr(openai_views, "served_model", broken)
    response = post(bearer(owner), {"model": MODEL, "messages": [USER]})
    assert response.status_code == 500 and b"/srv" not in response.content
    assert response.json()["error"]["type"] == "server_error"


# --- pieces -------------------------------------------------------------------------------------------


class _Answered(AnswerStream):
    """An answer of one piece that ends with ``finish``, as a runner records it."""

    def __init__(self, finish: str):
        self.finish = finish
        super().__init__()

    def _run(self):
        yield "Half an"
        self.generation = Generation(
            text="Half an", finish_reason=self.finish, model="m", decoding={}, input_tokens=3, output_tokens=2
        )


@pytest.mark.parametrize(
    "finish, openai_finish",
    [("stop", "stop"), ("length", "length"), ("timeout", "length"), ("cut_short", "length")],
)
def test_every_finish_reason_is_one_of_openais(finish, openai_finish):
    # A runner's cut_short (the reader left) is no "stop": the model did not end its turn.
    whole = completion(_Answered(finish), [], model_id="m")
    assert whole["choices"][0]["finish_reason"] == openai_finish
    chunks = [e for e in events(_Answered(finish), [], model_id="m") if e != "data: [DONE]\n\n"]
    assert json.loads(chunks[-1][len("data: ") :])["choices"][0]["finish_reason"] == openai_finish


def test_the_stop_trimmer_holds_back_what_may_begin_a_stop_sequence():
    trimmer = StopTrimmer(["END", "\n\n"])  # hold back 2 characters
    assert [trimmer.feed(p) for p in ("Hello", " wor", "ld E", "N", "D and more")] == [
        "Hel",
        "lo w",
        "orld",
        " ",
        "",
    ]
    assert trimmer.stopped and trimmer.feed("x") == ""
    assert trimmer.rest("Hello world ") == ""  # everything before the stop was sent
    plain = StopTrimmer([])
    assert [plain.feed(p) for p in ("a", "b")] == ["a", "b"] and plain.rest("abc") == "c"


def test_slot_queue_comments_are_not_chunks(smollm2_model, owner):
    """While another answer holds the only slot, the stream sends ``: waiting`` comments, then the answer."""
    from engine.runtime.slots import GENERATION_SLOTS

    held, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold, args=(GENERATION_SLOTS, held, release))
    holder.start()
    assert held.wait(10)
    try:
        response = post(bearer(owner), {"model": MODEL, "messages": [USER], "max_tokens": 2, "stream": True})
        threading.Timer(1.5, release.set).start()
        text = b"".join(response.streaming_content).decode()
    finally:
        release.set()
        holder.join()
    assert ": waiting, 0 ahead\n\n" in text
    assert text.endswith("data: [DONE]\n\n")


def _hold(slots, held: threading.Event, release: threading.Event) -> None:
    with slots.slot():
        held.set()
        release.wait(10)
