"""Request bodies over the cap are refused before anything reads them (config/middleware.py)."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tests.factories import UserFactory


def _spooled() -> set[str]:
    return {p.name for p in Path(settings.FILE_UPLOAD_TEMP_DIR).iterdir()}


@pytest.mark.django_db
def test_an_anonymous_body_over_its_cap_is_refused_before_it_is_spooled(settings):
    settings.RCB_ANONYMOUS_REQUEST_MAX_BYTES = 4096
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    before = _spooled()
    response = Client().post(
        reverse("account_login"), {"login": "x@example.org", "f": SimpleUploadedFile("f.bin", b"x" * 200_000)}
    )
    assert response.status_code == 413
    assert "at most 4096 without signing in" in response.content.decode()
    assert _spooled() == before
    # A sign-in form of ordinary size still works.
    assert (
        Client().post(reverse("account_login"), {"login": "x@example.org", "password": "p"}).status_code
        == 200
    )


@pytest.mark.django_db
def test_a_signed_in_request_may_send_up_to_the_large_cap_and_no_more(settings):
    settings.RCB_ANONYMOUS_REQUEST_MAX_BYTES = 4096
    settings.RCB_REQUEST_MAX_BYTES = 100_000
    client = Client()
    client.force_login(UserFactory())
    small = client.post(reverse("account_login"), {"f": SimpleUploadedFile("f.bin", b"x" * 50_000)})
    assert small.status_code != 413
    big = client.post(reverse("account_login"), {"f": SimpleUploadedFile("f.bin", b"x" * 200_000)})
    assert big.status_code == 413 and "at most 100000 (" in big.content.decode()


def test_a_content_length_that_is_not_a_number_is_a_clear_400(client):
    response = client.generic("POST", "/accounts/login/", b"", CONTENT_LENGTH="12abc")
    assert response.status_code == 400 and "'12abc' is not a number of bytes" in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_real_server_answers_413_to_a_200_mb_declaration_without_reading_it(live_server, settings):
    """As a client would: the headers claim 200 MB, a few bytes follow, the answer comes at once."""
    before = _spooled()
    parts = urlsplit(live_server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(
            b"POST /accounts/login/ HTTP/1.1\r\nHost: testserver\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 209715200\r\n\r\n"
            b'--b\r\nContent-Disposition: form-data; name="f"; filename="f"\r\n\r\nxxxx'
        )
        answer = conn.recv(65536).decode(errors="replace")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert _spooled() == before
