"""The catalogue's pages (``contributions/views/catalogue.py``): the papers page."""

from __future__ import annotations

import pytest

from contributions import services

pytestmark = pytest.mark.django_db


def test_papers_page_shows_an_empty_state_before_any_import(client):
    html = client.get("/papers/").content.decode()
    assert "No papers yet" in html and "import_pset" in html
    assert "papers-table" not in html


def test_papers_page_lists_papers_with_arxiv_and_code_links(client, small_pset):
    services.release_create_from_pset(path=small_pset(), name="r1")
    response = client.get("/papers/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "No papers yet" not in html
    assert '<a href="https://arxiv.org/abs/2501.00000v2" rel="noopener">Paper alpha</a>' in html
    assert '<a href="https://github.com/example/beta" rel="noopener">code</a>' in html
    assert "<code>alpha</code>" in html and "ICLR2025" in html and "2025-01-07" in html
    assert '<td class="num">3</td>' in html and '<td class="num">4</td>' in html
