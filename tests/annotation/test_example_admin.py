"""Owners search examples in the admin, in any script, and cannot hand-make an example."""

import pytest

from annotation.models import Example

pytestmark = pytest.mark.django_db

TEXTS = ["They're all just 🐍🐍", "كلام عربي هنا", "שלום בעברית", "plain ascii words"]


@pytest.fixture
def examples(hate_round):
    return [
        Example.objects.create(
            round=hate_round, inputs={"statement": text}, target="hateful", external_id=f"e{i}"
        )
        for i, text in enumerate(TEXTS)
    ]


def test_json_text_is_stored_unescaped():
    field = Example._meta.get_field("inputs")
    encoded = field.encoder().encode({"statement": "🐍 עברית"})
    assert encoded == '{"statement": "🐍 עברית"}'


@pytest.mark.parametrize(("query", "index"), [("🐍", 0), ("عربي", 1), ("בעברית", 2), ("ASCII", 3)])
def test_owner_finds_examples_by_text_in_any_script(client, owner, examples, query, index):
    client.force_login(owner)
    response = client.get("/admin/annotation/example/", {"q": query})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [examples[index]]


def test_search_by_id_and_a_non_numeric_query_does_not_fail(client, owner, examples):
    client.force_login(owner)
    response = client.get("/admin/annotation/example/", {"q": str(examples[2].pk)})
    assert examples[2] in response.context["cl"].result_list
    assert client.get("/admin/annotation/example/", {"q": "🐍"}).status_code == 200


def test_examples_cannot_be_added_by_hand(client, owner, django_user_model):
    superuser = django_user_model.objects.create_superuser("root", password="pw-for-root-123")
    for user in (owner, superuser):
        client.force_login(user)
        assert client.get("/admin/annotation/example/add/").status_code == 403
        assert client.post("/admin/annotation/example/add/", {"split": "train"}).status_code == 403
    assert Example.objects.count() == 0


def _change(client, example, **data):
    inline = {
        f"predictions-{k}": "0" for k in ("TOTAL_FORMS", "INITIAL_FORMS", "MIN_NUM_FORMS", "MAX_NUM_FORMS")
    }
    return client.post(f"/admin/annotation/example/{example.pk}/change/", {"split": "", **inline, **data})


def test_empty_tags_and_metadata_mean_none(client, owner, examples):
    client.force_login(owner)
    response = _change(client, examples[0], tags="", metadata="")
    assert response.status_code == 302
    examples[0].refresh_from_db()
    assert (examples[0].tags, examples[0].metadata) == ([], {})


@pytest.mark.parametrize(
    ("tags", "metadata", "error"),
    [
        ("[1, 2]", "{}", "Tags must be a JSON list of non-empty strings"),
        ('{"a": 1}', "{}", "Tags must be a JSON list of non-empty strings"),
        ('["ok"]', "[1]", "Metadata must be a JSON object"),
        ('["ok"]', '"text"', "Metadata must be a JSON object"),
    ],
)
def test_tags_and_metadata_keep_their_shape(client, owner, examples, tags, metadata, error):
    client.force_login(owner)
    response = _change(client, examples[0], tags=tags, metadata=metadata)
    assert response.status_code == 200
    assert error in response.content.decode()
    examples[0].refresh_from_db()
    assert (examples[0].tags, examples[0].metadata) == ([], {})
