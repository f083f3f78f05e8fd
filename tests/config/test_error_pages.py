"""Pages instead of raw answers (issue 22 item 5): styled 404 and 405 pages that say what to do, ``/api/`` as
a page linking the schema and the Swagger reference, and a schema whose public reads carry no security
requirement, so Swagger UI draws a lock only on what needs a token. The 403 page is
tests/contributions/test_review_words.py's."""

from __future__ import annotations

import json

import pytest

from tests.factories.builders import proposal_validated

pytestmark = pytest.mark.django_db

SITE_NAV = '<nav class="nav" aria-label="Main">'


def test_a_missing_page_is_the_site_s_404_with_where_to_go(client):
    response = client.get("/no/such/page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert SITE_NAV in html and "<h1>Page not found</h1>" in html
    assert 'href="/releases/"' in html and 'href="/api/"' in html


def test_reloading_a_form_s_address_gives_a_page_that_links_the_form(client):
    proposal = proposal_validated()
    client.force_login(proposal.author)

    response = client.get(f"/contribute/{proposal.pk}/review/")

    html = response.content.decode()
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert SITE_NAV in html and "<h1>This address receives a form</h1>" in html
    assert f'<a href="/contribute/{proposal.pk}/">the page with the form</a>' in html


def test_the_api_keeps_its_plain_405(client):
    response = client.delete("/api/v1/runs/")
    assert response.status_code in (401, 403, 405)
    assert SITE_NAV not in response.content.decode()


@pytest.mark.parametrize("url", ["/api/", "/api/v1/"])
def test_api_front_page_links_the_schema_and_the_reference(client, url):
    response = client.get(url)
    html = response.content.decode()
    assert response.status_code == 200 and SITE_NAV in html
    assert 'href="/api/v1/docs/"' in html and 'href="/api/v1/schema/"' in html
    assert 'href="/api/"' in html.split('aria-label="Main"')[1].split("</nav>")[0]


def test_swagger_page_has_a_language_a_main_landmark_a_heading_and_a_way_back(client):
    html = client.get("/api/v1/docs/").content.decode()
    assert '<html lang="en">' in html and '<main id="main">' in html and "<h1>" in html
    assert '<a href="/">' in html and '<a href="/api/">' in html


def test_only_operations_that_need_a_token_carry_security_in_the_schema(client):
    schema = json.loads(client.get("/api/v1/schema/", {"format": "json"}).content)
    secured = {
        (method, path)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if op.get("security")
    }
    # the upload, and the receipt of an upload answered 202, which only its submitter (or a maintainer) reads
    receipt = "/api/v1/runs/uploads/{upload_id}/"
    assert secured == {("post", "/api/v1/runs/upload/"), ("get", receipt)}
    assert schema["paths"]["/api/v1/runs/upload/"]["post"]["security"] == [{"tokenAuth": []}]
    assert {"tokenAuth": []} in schema["paths"][receipt]["get"]["security"]
    assert "tokenAuth" in schema["components"]["securitySchemes"]
