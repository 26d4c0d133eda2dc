"""Bodies Django cannot read answer 400 with a page, never 500."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def csrf_client(client):
    client.raise_request_exception = False
    client.get("/accounts/login/")
    return client, client.cookies["csrftoken"].value


@pytest.mark.parametrize("charset", ["utf8", "iso-8859-1", "latin1"])
def test_form_body_in_another_charset_is_a_clear_400(csrf_client, charset):
    client, token = csrf_client
    response = client.generic(
        "POST",
        "/accounts/login/",
        f"csrfmiddlewaretoken={token}&login=x&password=y",
        content_type=f"application/x-www-form-urlencoded; charset={charset}",
    )
    assert response.status_code == 400
    assert b"must be UTF-8 encoded" in response.content


def test_the_utf8_form_body_still_reaches_the_view(csrf_client):
    client, token = csrf_client
    response = client.generic(
        "POST",
        "/accounts/login/",
        f"csrfmiddlewaretoken={token}&login=nobody&password=wrong-password",
        content_type="application/x-www-form-urlencoded; charset=utf-8",
    )
    assert response.status_code == 200  # the login form again, with its error
    assert b"not correct" in response.content


@pytest.mark.parametrize("text", ["%ED%A0%80", "ok%FF", "%C3"])  # a surrogate, a stray byte, a cut sequence
def test_a_form_body_that_is_not_utf8_is_a_400_and_stores_nothing(csrf_client, annotator, password, text):
    from annotation.models import Example

    client, _ = csrf_client
    assert client.login(username=annotator.username, password=password)
    client.get("/tasks/hate-speech/create/")
    token = client.cookies["csrftoken"].value
    response = client.generic(
        "POST",
        "/tasks/hate-speech/create/",
        f"csrfmiddlewaretoken={token}&statement={text}&label=hateful",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    assert b"not valid UTF-8" in response.content
    assert not Example.objects.exists()


def test_percent_encoded_utf8_with_emoji_and_plus_signs_still_reads(csrf_client):
    client, token = csrf_client
    response = client.generic(
        "POST",
        "/accounts/login/",
        f"csrfmiddlewaretoken={token}&login=%F0%9F%90%80+rat&password=a+b%2Bc",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert b"not correct" in response.content


def test_a_body_over_the_upload_limit_is_a_400_page(csrf_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client, token = csrf_client
    response = client.post("/accounts/login/", {"csrfmiddlewaretoken": token, "login": "x" * 5000})
    assert response.status_code == 400
    assert b"too large" in response.content


def test_get_on_a_post_only_address_explains_itself(client, annotator):
    client.force_login(annotator)
    response = client.get("/examples/1/retract/")
    assert response.status_code == 405
    assert b"only takes a form" in response.content
    assert response["Allow"] == "POST"
    # The length header describes the page, not the empty 405 Django made (found by a tester: clients
    # saw "excess data after the response").
    assert int(response["Content-Length"]) == len(response.content) > 0
