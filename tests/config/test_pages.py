"""The base layout, /healthz, the status page and the static assets."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.utils import timezone

from tests.factories import MaintainerFactory, UserFactory, WorkerHeartbeatFactory

pytestmark = pytest.mark.django_db

NAV_LABELS = ["Leaderboard", "Papers", "Releases", "Contribute", "Runs", "API", "Status"]
REVIEW_LINK = re.compile(r'<a href="/review/"[^>]*>\s*Review\s*</a>')


def test_base_page_has_navigation_vendored_htmx_and_csrf_header(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    for label in NAV_LABELS:
        assert re.search(rf">\s*{label}\s*</a>", html), label
    script = re.search(r'<script src="([^"]*htmx[^"]*)"', html)
    assert script and script.group(1) == "/static/vendor/htmx-2.0.11/htmx.min.js"
    assert '<main id="main"' in html and 'lang="en"' in html
    # A plain visitor's page is public (shared caches may store it), so it carries no visitor's token;
    # a signed-in visitor's page sends it with every htmx request.
    assert "X-CSRFToken" not in html and "csrftoken" not in response.cookies
    client.force_login(MaintainerFactory())
    assert 'hx-headers=\'{"X-CSRFToken": "' in client.get("/").content.decode()


def test_the_review_link_is_offered_to_maintainers_only(client):
    """Issue 22: a non-maintainer who followed "Review" got a 403; the link is offered only where it opens."""
    assert not REVIEW_LINK.search(client.get("/papers/").content.decode())
    client.force_login(UserFactory())
    assert not REVIEW_LINK.search(client.get("/papers/").content.decode())
    client.force_login(MaintainerFactory())
    assert REVIEW_LINK.search(client.get("/papers/").content.decode())


#: pages behind sign-in: the review queue (maintainers), a new contribution's first step, the notifications
SIGNED_IN_PAGES = ["/review/", "/contribute/new/", "/notifications/"]


def test_no_page_links_to_an_external_cdn(client):
    for url in ["/", "/papers/", "/contribute/", "/runs/", "/status/", "/accounts/login/"]:
        html = client.get(url).content.decode()
        assert not re.search(r'<(script|link)[^>]+(src|href)="https?://', html), url
    client.force_login(MaintainerFactory())
    for url in SIGNED_IN_PAGES:
        response = client.get(url)
        assert response.status_code == 200, url
        assert not re.search(r'<(script|link)[^>]+(src|href)="https?://', response.content.decode()), url


def test_vendored_htmx_file_exists_and_is_htmx():
    path = finders.find("vendor/htmx-2.0.11/htmx.min.js")
    assert path, "htmx must be vendored under static/"
    with open(path, encoding="utf-8") as fh:
        assert "htmx" in fh.read(4000)


# /review/ is for maintainers (tests/contributions/test_review_pages.py: contributors get 403).
@pytest.mark.parametrize("url", ["/papers/", "/contribute/", "/runs/", "/status/"])
def test_every_public_navigation_target_renders(client, url):
    response = client.get(url)
    assert response.status_code == 200
    assert "<h1>" in response.content.decode()


@pytest.mark.parametrize("url", [*SIGNED_IN_PAGES, "/contribute/1/step/2/", "/contribute/1/"])
def test_pages_behind_sign_in_send_visitors_to_the_sign_in_page_and_back(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


@pytest.mark.parametrize("url", SIGNED_IN_PAGES)
def test_navigation_targets_behind_sign_in_render_for_a_maintainer(client, url):
    client.force_login(MaintainerFactory())
    response = client.get(url)
    assert response.status_code == 200
    assert "<h1>" in response.content.decode()


def test_healthz_reports_database_broker_and_no_workers(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["database"]["ok"] is True
    assert body["broker"]["ok"] is True
    assert body["workers"] == []
    assert body["ok"] is True


def test_healthz_lists_workers_with_a_recent_heartbeat_only(client):
    now = timezone.now()
    WorkerHeartbeatFactory(hostname="alive@h", started_at=now, last_seen_at=now)
    WorkerHeartbeatFactory(hostname="stale@h", started_at=now, last_seen_at=now - timezone.timedelta(hours=1))
    WorkerHeartbeatFactory(hostname="stopped@h", started_at=now, last_seen_at=now, status="stopped")
    body = client.get("/healthz").json()
    assert [w["hostname"] for w in body["workers"]] == ["alive@h"]


def test_healthz_is_503_when_the_broker_is_unreachable(client, settings):
    settings.CELERY_BROKER_URL = "amqp://guest:guest@127.0.0.1:1//"
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["broker"]["ok"] is False and body["broker"]["error"]


def test_the_admin_login_sends_visitors_to_the_site_sign_in(client):
    response = client.get("/admin/login/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")
    assert client.get("/accounts/login/").status_code == 200


def test_api_docs_are_served_without_a_cdn(client):
    html = client.get("/api/v1/docs/").content.decode()
    assert "swagger" in html.lower()
    assert not re.search(r'(src|href)="https?://', html)
    assert client.get("/api/v1/schema/").status_code == 200
