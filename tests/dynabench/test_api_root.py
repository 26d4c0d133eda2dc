"""``GET /api/``: the API's root, with the schema's and the docs' links and every endpoint."""

from __future__ import annotations

import pytest
import yaml

pytestmark = pytest.mark.django_db


def test_the_api_root_lists_the_schema_and_every_endpoint(client):
    """``GET /api/`` answered 404; it gives the schema's and the docs' links and every operation of the
    schema, with its methods."""
    response = client.get("/api/")
    assert response.status_code == 200
    body = response.json()
    assert body["schema"] == "http://testserver/api/schema/"
    assert body["docs"] == "http://testserver/api/docs/"
    schema = yaml.safe_load(client.get("/api/schema/").content)
    listed = {row["path"]: row["methods"] for row in body["endpoints"]}
    assert set(listed) == set(schema["paths"])
    assert listed["/api/tasks/{slug}/examples/"] == ["GET", "POST"]
    assert listed["/api/"] == ["GET"]
    conversations = next(row for row in body["endpoints"] if row["path"] == "/api/conversations/{id}/")
    assert conversations["summary"] == (
        "One of the caller's conversations with its turns; another user's is a 404, as a missing one."
    )
