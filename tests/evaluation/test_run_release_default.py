"""Run forms default to a release the portal can run (issue 22 item 6): the default release of the demo is
the paper's metadata-only one, whose snippets cannot be tested here; a release with nothing to test is
refused with a reason instead of an estimate of 0 requests."""

from __future__ import annotations

import re

import pytest

from contributions import services
from tests.factories import MaintainerFactory, UserFactory, fake_llm_model, make_release

pytestmark = pytest.mark.django_db


def selected_release(html: str) -> str:
    match = re.search(r'<select name="release"[^>]*>.*?<option value="([^"]+)" selected', html, re.S)
    assert match, "no release preselected"
    return match.group(1)


def test_run_forms_default_to_a_runnable_release_not_the_metadata_only_default(client):
    runnable = make_release("runnable", with_metadata_only=False)
    published = make_release("published", with_metadata_only=True)
    services.release_set_default(release=published)
    assert runnable.pk != published.pk

    client.force_login(UserFactory())
    assert selected_release(client.get("/runs/upload/").content.decode()) == "runnable"
    client.force_login(MaintainerFactory())
    assert selected_release(client.get("/runs/new/").content.decode()) == "runnable"
    # A release named in the address is still the one shown.
    html = client.get("/runs/new/", {"release": "published"}).content.decode()
    assert selected_release(html) == "published"


def test_start_evaluation_refuses_a_release_with_nothing_to_test_instead_of_offering_0_requests(
    client, fake_llm
):
    release = make_release("published", with_metadata_only=True)
    release.entries.filter(task_version__has_files=True).delete()
    model = fake_llm_model(fake_llm.base_url)
    client.force_login(MaintainerFactory())

    response = client.post(
        "/runs/new/",
        {
            "model": model.key,
            "release": "published",
            "template": "rcb-v2",
            "with_paper": "with",
            "n_completions": "1",
        },
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "Start evaluation" not in html.split("</main>")[0].split("<main")[1].replace(
        "Start evaluation of", ""
    )
    assert "has no snippet the portal can test" in html
