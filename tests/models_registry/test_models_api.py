"""The model API: cards and their visibility, zip uploads, predictions."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from engine.runtime.weights import count_parameters
from models_registry import inference
from models_registry.models import RegisteredModel
from models_registry.serializers import MAX_PREDICT_INPUTS
from tests.helpers.api import forced_client as api
from tests.helpers.zips import zip_bytes, zip_dir

MODELS = "/api/models/"


def names(response) -> list[str]:
    return [row["name"] for row in response.json()["results"]]


# --- cards and visibility ------------------------------------------------------------------------------


def test_an_unpublished_model_is_seen_by_its_owner_and_the_task_owners_only(
    make_model, owner, annotator, outsider
):
    make_model("public")
    hidden = make_model("draft", owner=annotator, published=False)
    assert names(api().get(MODELS)) == ["public"]
    assert names(api(outsider).get(MODELS)) == ["public"]
    assert names(api(annotator).get(MODELS)) == ["draft", "public"]
    assert names(api(owner).get(MODELS)) == ["draft", "public"]
    assert api(outsider).get(f"{MODELS}{hidden.pk}/").status_code == 404
    assert api().get(f"{MODELS}{hidden.pk}/").status_code == 404
    assert api(annotator).get(f"{MODELS}{hidden.pk}/").json()["name"] == "draft"
    assert api(owner).get(f"{MODELS}{hidden.pk}/").status_code == 200
    assert api(owner).get(f"{MODELS}999999/").status_code == 404


def test_the_card_has_the_model_page_fields(make_model, annotator):
    model = make_model(
        "carded",
        owner=annotator,
        backbone="all-MiniLM-L6-v2",
        parameter_count=22_713_216,
        card={
            "licence": "MIT",
            "training_data": "HatemojiBuild rounds 1-2",
            "paper_link": "https://arxiv.org/abs/2104.14337",
            "description": "A frozen MiniLM with a logistic head. 🙂",
        },
    )
    card = api().get(f"{MODELS}{model.pk}/").json()
    assert card == {
        "id": model.pk,
        "name": "carded",
        "task": "hate-speech",
        "owner": "annotator",
        "source": "local_dir",
        "backbone": "all-MiniLM-L6-v2",
        "parameter_count": 22_713_216,
        "runtime": "torch",
        "runtime_check": None,  # made without a registration: never checked
        "licence": "MIT",
        "training_data": "HatemojiBuild rounds 1-2",
        "paper": "https://arxiv.org/abs/2104.14337",
        "description": "A frozen MiniLM with a logistic head. 🙂",
        "status": "ready",
        "recheck": None,
        "failure_message": None,
        "published": True,
        "anonymous": False,
        "created_at": card["created_at"],
        "updated_at": card["updated_at"],
    }


def test_an_anonymous_model_shows_no_owner_name_or_paper_to_others(make_model, owner, annotator, outsider):
    make_model("first-anon", anonymous=True)
    model = make_model(
        "secret-name", owner=annotator, anonymous=True, card={"paper_link": "https://example.org/p"}
    )
    for viewer in (None, outsider):
        card = api(viewer).get(f"{MODELS}{model.pk}/").json()
        # Second anonymous model of the task by id -> "Anonymous model 2", as on the leaderboard.
        assert (card["name"], card["owner"], card["paper"]) == ("Anonymous model 2", None, "")
        assert "secret-name" not in str(api(viewer).get(MODELS).json())
        assert "annotator" not in str(api(viewer).get(MODELS).json())
    for viewer in (annotator, owner):
        card = api(viewer).get(f"{MODELS}{model.pk}/").json()
        assert (card["name"], card["owner"], card["paper"]) == (
            "secret-name",
            "annotator",
            "https://example.org/p",
        )


def test_the_failure_message_is_for_those_who_manage_the_model(make_model, owner, annotator, outsider):
    model = make_model(
        "broken", owner=annotator, status=RegisteredModel.Status.FAILED, error_message="no config.json"
    )
    assert api(outsider).get(f"{MODELS}{model.pk}/").json()["failure_message"] is None
    assert api(annotator).get(f"{MODELS}{model.pk}/").json()["failure_message"] == "no config.json"
    assert api(owner).get(f"{MODELS}{model.pk}/").json()["failure_message"] == "no config.json"


def test_filters_by_task_status_and_mine(make_model, annotator, hate_task):
    from tasks.models import Task

    other = Task.objects.create(name="Other", slug="other", config=hate_task.config)
    make_model("ready-one")
    make_model("mine", owner=annotator)
    make_model("failed-one", status=RegisteredModel.Status.FAILED)
    RegisteredModel.objects.create(
        task=other, name="elsewhere", status=RegisteredModel.Status.READY, is_published=True
    )
    client = api(annotator)
    assert names(client.get(MODELS, {"task": "other"})) == ["elsewhere"]
    assert names(client.get(MODELS, {"status": "failed"})) == ["failed-one"]
    assert names(client.get(MODELS, {"mine": "true"})) == ["mine"]
    assert names(api().get(MODELS, {"mine": "true"})) == []
    response = client.get(MODELS, {"status": "exploded"})
    assert response.status_code == 400 and "status" in response.json()
    # ?mine=abc was read as "no filter" (django-filter's BooleanFilter): now true or false only.
    response = client.get(MODELS, {"mine": "abc"})
    assert response.status_code == 400 and list(response.json()) == ["mine"]
    assert names(client.get(MODELS, {"mine": "false", "task": "hate-speech"})) == ["failed-one", "ready-one"]
    response = client.get(MODELS, {"owner": "me"})
    assert response.json() == {
        "owner": ["Unknown parameter; this list takes: task, status, runtime, mine, page, page_size, format."]
    }


def test_the_list_is_paginated(make_model):
    for n in range(3):
        make_model(f"m{n}")
    body = api().get(MODELS, {"page_size": 2}).json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"] and body["previous"] is None


def test_token_authentication(make_model, annotator):
    make_model("draft", owner=annotator, published=False)
    token = Token.objects.create(user=annotator)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert names(client.get(MODELS)) == ["draft"]
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert client.get(MODELS).status_code == 401


# --- uploads -----------------------------------------------------------------------------------------


def _upload_data(fileobj, *, name="uploaded", task="hate-speech", **extra):
    return {
        "task": task,
        "name": name,
        "file": SimpleUploadedFile("model.zip", fileobj.getvalue(), content_type="application/zip"),
        "licence": "MIT",
        "description": "Uploaded through the API.",
        **extra,
    }


def test_an_upload_is_accepted_and_its_check_runs_on_commit(
    annotator, hate_task, tiny_model_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api(annotator).post(MODELS, _upload_data(zip_dir(tiny_model_dir)), format="multipart")
    # The check is queued for after the commit, so the answer is 202 with status "uploaded".
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "uploaded"
    model = RegisteredModel.objects.get(pk=response.json()["id"])
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.owner == annotator and model.source == RegisteredModel.Source.UPLOAD
    assert model.parameter_count == count_parameters(tiny_model_dir)
    assert model.card["licence"] == "MIT"
    assert (model.is_published, model.is_anonymous) == (False, False)  # unpublished until chosen


@pytest.mark.django_db(transaction=True)
def test_an_upload_whose_check_ran_inline_answers_201_ready(annotator, hate_task, tiny_model_dir):
    response = api(annotator).post(
        MODELS, _upload_data(zip_dir(tiny_model_dir), published="true"), format="multipart"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "ready" and body["published"] is True
    assert body["parameter_count"] == count_parameters(tiny_model_dir)
    assert body["failure_message"] == ""


def test_a_refused_zip_leaves_a_failed_model_with_the_reason(annotator, hate_task):
    fileobj = zip_bytes([("config.json", b"{}"), ("../evil", b"x")])
    response = api(annotator).post(MODELS, _upload_data(fileobj, name="evil"), format="multipart")
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "failed"
    assert body["failure_message"].startswith("upload refused:")


def test_an_oversized_zip_answers_413_and_stores_nothing(settings, annotator, hate_task, tiny_model_dir):
    settings.DYNABENCH_MODEL_UPLOAD_MAX_BYTES = 1000
    response = api(annotator).post(MODELS, _upload_data(zip_dir(tiny_model_dir)), format="multipart")
    assert response.status_code == 413
    assert "the limit is 1,000 bytes" in response.json()["detail"]
    assert not RegisteredModel.objects.exists()


def test_pickle_checkpoints_only_for_task_owners(owner, annotator, hate_task, tiny_model_dir):
    response = api(annotator).post(
        MODELS, _upload_data(zip_dir(tiny_model_dir), allow_pickle="true"), format="multipart"
    )
    assert response.status_code == 403
    assert not RegisteredModel.objects.exists()


def test_upload_refusals(annotator, outsider, hate_task, tiny_model_dir, make_model):
    make_model("taken")
    client = api(annotator)
    response = client.post(MODELS, _upload_data(zip_dir(tiny_model_dir), name="taken"), format="multipart")
    assert response.status_code == 400 and "already has a model named 'taken'" in response.json()["name"][0]
    response = client.post(MODELS, _upload_data(zip_dir(tiny_model_dir), task="nope"), format="multipart")
    assert response.status_code == 400 and "task" in response.json()
    response = client.post(MODELS, {"task": "hate-speech", "name": "x"}, format="multipart")
    assert response.status_code == 400 and "file" in response.json()
    response = client.post(MODELS, _upload_data(zip_dir(tiny_model_dir), name="   "), format="multipart")
    assert response.status_code == 400 and "name" in response.json()
    data = _upload_data(zip_dir(tiny_model_dir))
    data["file"] = SimpleUploadedFile("model.tar", b"x")
    assert client.post(MODELS, data, format="multipart").status_code == 400
    assert api().post(MODELS, _upload_data(zip_dir(tiny_model_dir)), format="multipart").status_code == 401
    outsider.is_blocked = True
    outsider.save()
    assert (
        api(outsider).post(MODELS, _upload_data(zip_dir(tiny_model_dir)), format="multipart").status_code
        == 403
    )
    assert list(RegisteredModel.objects.values_list("name", flat=True)) == ["taken"]


def test_a_repeated_idempotency_key_replays_the_upload(annotator, hate_task, tiny_model_dir):
    client = api(annotator)
    data = zip_dir(tiny_model_dir).getvalue()

    def post():
        upload = SimpleUploadedFile("model.zip", data, content_type="application/zip")
        return client.post(
            MODELS,
            {"task": "hate-speech", "name": "once", "file": upload},
            format="multipart",
            HTTP_IDEMPOTENCY_KEY="upload-1",
        )

    first, second = post(), post()
    assert first.status_code == second.status_code == 202
    assert second["Idempotent-Replayed"] == "true"
    assert first.json()["id"] == second.json()["id"]
    assert RegisteredModel.objects.filter(name="once").count() == 1


# --- predictions -------------------------------------------------------------------------------------


def predict_url(model) -> str:
    return f"{MODELS}{model.pk}/predict/"


def test_predict_gives_one_output_per_input_as_the_classifier(tiny_registered_model, annotator):
    inputs = [{"statement": "I love you"}, {"statement": "they should go back home 🐍"}]
    response = api(annotator).post(predict_url(tiny_registered_model), {"inputs": inputs}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    expected = inference.predict(tiny_registered_model, inputs)
    assert body["model"] == tiny_registered_model.pk
    assert [o["label"] for o in body["outputs"]] == [o["label"] for o in expected]
    for got, want in zip(body["outputs"], expected, strict=True):
        assert set(got["probabilities"]) == {"hateful", "not-hateful"}
        assert sum(got["probabilities"].values()) == pytest.approx(1.0)
        assert got["probabilities"]["hateful"] == pytest.approx(want["probabilities"]["hateful"])


def test_predict_input_errors_are_400_with_field_messages(tiny_registered_model, annotator):
    client = api(annotator)
    url = predict_url(tiny_registered_model)
    bad = client.post(
        url, {"inputs": [{"statement": "fine"}, {"text": "wrong field"}, {"statement": "  "}]}, format="json"
    )
    assert bad.status_code == 400
    errors = bad.json()["inputs"]
    assert set(errors) == {"1", "2"}
    assert "required" in errors["1"]["statement"][0]
    assert errors["2"]["statement"] == ["Type some text for the model."]
    odd = [
        {"statement": "a\x07b"},
        {"statement": "abc\u202edef"},
        {"statement": "\u200b\u200b"},
        {"statement": "مرحبا \u200f🙂"},
    ]
    refused = client.post(url, {"inputs": odd}, format="json")
    assert refused.status_code == 400
    assert refused.json()["inputs"] == {
        "0": {"statement": ["The text contains the control character U+0007; remove it and send again."]},
        "1": {
            "statement": [
                "The text contains U+202E RIGHT-TO-LEFT OVERRIDE, which shows the text in another order than "
                "it is stored; remove it and send again (right-to-left text itself is fine)."
            ]
        },
        "2": {
            "statement": [
                "The text has no visible character; write something visible (letters, digits, punctuation "
                "or emoji), not only invisible or blank characters."
            ]
        },
    }  # right-to-left text with a mark and an emoji is fine
    too_long = client.post(url, {"inputs": [{"statement": "a" * 2_001}]}, format="json")
    # the create page's wording; counted after CRLF -> LF, so 1,000 CRLF pairs (2,000 characters) pass
    assert too_long.status_code == 400 and too_long.json() == {
        "inputs": {"0": {"statement": ["The text is too long: 2,001 characters, at most 2,000 allowed."]}}
    }
    assert client.post(url, {"inputs": [{"statement": "a\r\n" * 1000}]}, format="json").status_code == 200
    too_many = client.post(url, {"inputs": [{"statement": "x"}] * (MAX_PREDICT_INPUTS + 1)}, format="json")
    assert too_many.status_code == 400 and "inputs" in too_many.json()
    assert client.post(url, {"inputs": []}, format="json").status_code == 400
    assert client.post(url, {"inputs": "nope"}, format="json").status_code == 400
    assert client.post(url, {"inputs": [{"statement": 5}]}, format="json").status_code == 400
    assert client.post(url, "not json", content_type="application/json").status_code == 400


def test_a_crashing_model_answers_502_not_500(tiny_registered_model, annotator, monkeypatch):
    def crash(model, inputs):
        raise inference.InferenceError(f"model {model.name}: simulated crash")

    monkeypatch.setattr(inference, "predict", crash)
    response = api(annotator).post(
        predict_url(tiny_registered_model), {"inputs": [{"statement": "hi"}]}, format="json"
    )
    assert response.status_code == 502
    assert response.json() == {"detail": "The model could not answer: model tiny-target: simulated crash"}

    def explode(model, inputs):
        raise RuntimeError("segfault-ish")

    monkeypatch.setattr(inference, "predict", explode)
    response = api(annotator).post(
        predict_url(tiny_registered_model), {"inputs": [{"statement": "hi"}]}, format="json"
    )
    assert response.status_code == 502 and "RuntimeError" in response.json()["detail"]


def test_predict_refusals(make_model, tiny_registered_model, annotator, outsider):
    body = {"inputs": [{"statement": "hi"}]}
    assert api().post(predict_url(tiny_registered_model), body, format="json").status_code == 401
    draft = make_model("draft", owner=annotator, published=False)
    assert api(outsider).post(predict_url(draft), body, format="json").status_code == 404
    checking = make_model("checking", status=RegisteredModel.Status.CHECKING)
    response = api(outsider).post(predict_url(checking), body, format="json")
    assert response.status_code == 409 and "not ready" in response.json()["detail"]


def test_span_outputs_keep_answer_start_and_bad_numbers_are_a_502(
    tiny_registered_model, annotator, monkeypatch
):
    url = predict_url(tiny_registered_model)
    body = {"inputs": [{"statement": "Ships sail at dawn."}]}
    monkeypatch.setattr(
        inference, "predict", lambda model, inputs: [{"answer": "dawn", "answer_start": 14, "score": 0.75}]
    )
    response = api(annotator).post(url, body, format="json")
    assert response.status_code == 200
    assert response.json()["outputs"] == [{"answer": "dawn", "answer_start": 14, "score": 0.75}]
    nan = float("nan")
    monkeypatch.setattr(
        inference, "predict", lambda model, inputs: [{"label": "hateful", "probabilities": {"hateful": nan}}]
    )
    response = api(annotator).post(url, body, format="json")
    assert response.status_code == 502 and "non-finite probability" in response.json()["detail"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bell\x07model", "The name contains the control character U+0007; use printable characters."),
        ("two\nlines", "The name contains the control character U+000A; use printable characters."),
        ("tab\tbed", "The name contains the control character U+0009; use printable characters."),
        ("esc\x1b[31m", "The name contains the control character U+001B; use printable characters."),
        ("c1\x85next", "The name contains the control character U+0085; use printable characters."),
        ("sep\u2028line", "The name contains the character U+2028; use printable characters."),
        ("ledom\u202eevil", "The name contains the character U+202E; use printable characters."),
        (
            "\u200b\u200d",
            "The name shows nothing: use at least one letter, digit, punctuation mark or symbol.",
        ),
        (
            "\u3164\u3164",  # HANGUL FILLER: a letter that renders blank, refused as example texts refuse it
            "The name shows nothing: use at least one letter, digit, punctuation mark or symbol.",
        ),
        ("nul\x00name", "Null characters are not allowed."),
    ],
)
def test_a_name_with_a_control_character_is_a_400(annotator, hate_task, tiny_model_dir, name, message):
    response = api(annotator).post(
        MODELS, _upload_data(zip_dir(tiny_model_dir), name=name), format="multipart"
    )
    assert response.status_code == 400
    assert response.json() == {"name": [message]}
    assert not RegisteredModel.objects.exists()


def test_letters_of_any_script_and_emoji_stay_allowed_in_a_name(annotator, hate_task, tiny_model_dir):
    name = "نموذج 🤖 Modèle 👩🏽‍💻"
    response = api(annotator).post(
        MODELS, _upload_data(zip_dir(tiny_model_dir), name=name), format="multipart"
    )
    assert response.status_code in (201, 202), response.json()
    assert RegisteredModel.objects.get().name == name


def test_a_qa_answer_start_counts_in_the_passage_as_sent_crlf_and_all(
    tiny_qa_registered_model, annotator, monkeypatch
):
    """The model reads the passage with CRLF made LF; the offset the caller gets is into what they sent."""
    passage = "Line one.\r\nLine two.\r\nThe Broncos won."
    seen = []

    def predict(model, inputs):
        seen.append(inputs[0]["context"])
        normalised = inputs[0]["context"]
        return [{"answer": "Broncos", "answer_start": normalised.index("Broncos"), "score": 0.9}]

    monkeypatch.setattr(inference, "predict", predict)
    body = {"inputs": [{"context": passage, "question": "Who won?"}]}
    response = api(annotator).post(predict_url(tiny_qa_registered_model), body, format="json")
    assert response.status_code == 200, response.json()
    [output] = response.json()["outputs"]
    assert seen == ["Line one.\nLine two.\nThe Broncos won."]
    assert output["answer_start"] == passage.index("Broncos") == 26  # 24 in the normalised passage
    assert passage[output["answer_start"] : output["answer_start"] + len("Broncos")] == "Broncos"
