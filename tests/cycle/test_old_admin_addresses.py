"""The loop's records moved from the leaderboards app's admin to cycle's: the old addresses redirect."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/admin/leaderboards/trainingjob/", "/admin/cycle/trainingjob/"),
        (
            "/admin/leaderboards/trainingjob/?status__exact=failed",
            "/admin/cycle/trainingjob/?status__exact=failed",
        ),
        ("/admin/leaderboards/release/7/change/", "/admin/cycle/release/7/change/"),
        ("/admin/leaderboards/artefactprobe/12/change/", "/admin/cycle/artefactprobe/12/change/"),
        # The rest of the path is quoted again: an escaped % or ? stays in the path.
        ("/admin/leaderboards/trainingjob/%2525/change/", "/admin/cycle/trainingjob/%2525/change/"),
        ("/admin/leaderboards/artefactprobe/%3Fq=1/", "/admin/cycle/artefactprobe/%3Fq%3D1/"),
    ],
)
def test_an_old_admin_address_of_a_moved_model_leads_to_its_new_one(client, old, new):
    response = client.get(old)
    assert response.status_code == 302
    assert response["Location"] == new


def test_the_admin_of_what_stayed_in_leaderboards_is_not_redirected(client):
    response = client.get("/admin/leaderboards/dataset/")
    # The admin's own answer (to the login page), not a redirect to cycle.
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
