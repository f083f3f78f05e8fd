"""Issue 36's author journey in Chromium: code uploaded with no tags, three snippets marked in the browser (one
by the keyboard alone), the masked preview, a save, a validation by a real worker that finds one snippet not
checked by its test, that snippet widened and validated again, and then checked. The stored file is the
hand-tagged file byte for byte, the proposal's history shows the tag that moved, and the marks survive a reload
and Back before they are saved. Every step is audited (axe, the page's end, no sideways scrolling) at 1280 and
390 px, as in tests/test_journeys.py."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from tests.conftest import chromium
from tests.test_journeys import Journey, sign_in, submit_button

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOY = Path(__file__).resolve().parent / "fixtures" / "marking_toy"

#: the toy's model.py as a careful author would tag it by hand, "float factor" widened to lines 6-8
TAGGED = '''"""A toy model: scale, shift and sum a list of numbers."""


def scale(values, factor):
    """Each value times ``factor``, as floats."""
    # <paper2code name="float factor">
    factor = float(factor)
    scaled = [v * factor for v in values]
    return scaled
    # </paper2code name="float factor">


def shift(values, offset):
    """Each value plus ``offset``."""
    # <paper2code name="shift values">
    shifted = [v + offset for v in values]
    return shifted
    # </paper2code name="shift values">


def total(values):
    """The sum of the absolute values."""
    # <paper2code name="sum of absolutes">
    absolute = [abs(v) for v in values]
    return sum(absolute)
    # </paper2code name="sum of absolutes">
'''


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    yield
    connections.close_all()


def toy_zip() -> dict:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(TOY.iterdir()):
            archive.writestr(f"toy/{path.name}", path.read_bytes())
    return {"name": "toy.zip", "mimeType": "application/zip", "buffer": buffer.getvalue()}


#: whether the snippet ``name``'s row shows a finished validation's answer for its present lines
JUDGED = """(name) => {
  const input = [...document.querySelectorAll("ol.mark-list input[name=old_name]")].find(e => e.value === name);
  const words = input && input.closest("li").querySelector(".mark-result");
  return !!words && /by its test/.test(words.textContent) && !/changed since|being validated/.test(words.textContent);
}"""


def result_of(page: Any, name: str) -> Any:
    return page.locator(f"ol.mark-list > li:has(input[name=old_name][value='{name}']) .mark-result")


def test_an_author_marks_snippets_on_untagged_code_validates_widens_one_and_validates_again(
    live_server, browser, start_worker
):
    from contributions.task_folders import blobs_read
    from tests.factories import UserFactory
    from tests.factories.builders import proposal_draft

    start_worker(concurrency=1)
    user = UserFactory()
    proposal = proposal_draft(user, task_key="toy-marked")
    author = Journey(browser, "marking", live_server.url)
    page = author.page
    sign_in(author, user, f"/contribute/{proposal.pk}/step/2/")

    # ---- the code as it is: no tags; the portal sends the author to the marking page
    page.set_input_files("#id_archive", toy_zip())
    submit_button(page)
    page.wait_for_url(f"**/contribute/{proposal.pk}/snippets/")
    assert "holds no paper2code tags yet" in page.locator("main").inner_text()
    assert page.locator("button.line-pick").count() == 20
    author.step("marking page, no snippet", targets=["button.line-pick[data-line='1']", "#mark-name"])

    # ---- "shift values" with the mouse: a click on its first line number and a shift-click on its last, or a
    # drag from the first to the last
    page.click("button.line-pick[data-line='13']")
    page.click("button.line-pick[data-line='15']", modifiers=["Shift"])
    assert (page.input_value("#mark-first"), page.input_value("#mark-last")) == ("13", "15")
    assert page.locator("tr.selected").count() == 3
    page.hover("button.line-pick[data-line='14']")
    page.mouse.down()
    page.hover("tr[data-line='15'] td.src")
    page.hover("tr[data-line='13'] td.src")
    page.mouse.up()
    assert (page.input_value("#mark-first"), page.input_value("#mark-last")) == ("13", "14")
    assert page.locator("tr.selected").count() == 2
    page.fill("#mark-name", "shift values")
    page.get_by_role("button", name="Add snippet").click()
    page.wait_for_selector("text=Snippet “shift values” marked on model.py, lines 13-14.")

    # ---- "sum of absolutes" by the keyboard alone: Enter starts the selection, Shift+ArrowDown extends it
    page.focus("button.line-pick[data-line='18']")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.keyboard.press("Shift+ArrowDown")
    assert page.evaluate("document.activeElement.dataset.line") == "20"
    assert (page.input_value("#mark-first"), page.input_value("#mark-last")) == ("19", "20")
    page.focus("#mark-name")
    page.keyboard.type("sum of absolutes")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Snippet “sum of absolutes” marked on model.py, lines 19-20.")

    # ---- "float factor": one line, which the test does not check on its own
    page.click("button.line-pick[data-line='6']")
    page.fill("#mark-name", "float factor")
    page.get_by_role("button", name="Add snippet").click()
    page.wait_for_selector("text=Snippet “float factor” marked on model.py, lines 6-6.")
    assert "3 snippets, 5 scored lines" in page.locator("#marks-heading").inner_text()
    author.step("three snippets marked", targets=["#mark-1-name", "button[value=save]"])

    # ---- unsaved marks survive a reload and Back
    # (Each page is let settle first: a navigation in the middle of loading the icon would abort it.)
    page.reload(wait_until="networkidle")
    assert "3 snippets" in page.locator("#marks-heading").inner_text()
    page.goto(f"{live_server.url}/contribute/{proposal.pk}/", wait_until="networkidle")
    page.go_back(wait_until="networkidle")
    assert "3 snippets" in page.locator("#marks-heading").inner_text()
    assert "Unsaved changes" in page.locator("main").inner_text()

    # ---- the preview: the file as a model is shown it, the snippet masked
    page.locator("ol.mark-list > li:has(input[value='sum of absolutes'])").get_by_role(
        "link", name="Preview"
    ).click()
    page.wait_for_url(re.compile(r".*preview=sum%20of%20absolutes.*"))
    masked = page.locator("#mark-preview pre.masked").inner_text()
    assert 'TODO: Implement block "sum of absolutes"' in masked and "abs(v)" not in masked
    assert "shifted = [v + offset for v in values]" in masked
    author.step("preview", targets=["#mark-preview pre.masked"])

    # ---- save, then validate: the worker finds "float factor" not checked by its test
    page.get_by_role("button", name="Save as a new revision").click()
    page.wait_for_selector("text=Saved as revision 1.")
    page.get_by_role("button", name="Validate", exact=True).click()
    page.wait_for_function(JUDGED, arg="float factor", timeout=180_000)
    assert "not checked by its test" in result_of(page, "float factor").inner_text()
    assert "mutation score 3/3, checked by its test" in result_of(page, "shift values").inner_text()
    assert "reference passes" in result_of(page, "sum of absolutes").inner_text()
    author.step("validated: one snippet not checked", targets=["#mark-3-last"])

    # ---- widen it over the lines that use it, and validate again: now it is checked
    row = page.locator("ol.mark-list > li:has(input[name=old_name][value='float factor'])")
    row.locator("input[name=last]").fill("8")
    row.get_by_role("button", name="Update").click()
    page.wait_for_selector("text=now covers lines 6-8")
    assert "changed since revision 1 was validated" in result_of(page, "float factor").inner_text()
    page.get_by_role("button", name="Save and validate").click()
    page.wait_for_function(
        "() => /Revision 2 \\(submitted\\)/.test(document.querySelector('#marks-status')?.textContent || '')",
        timeout=60_000,
    )
    page.wait_for_function(JUDGED, arg="float factor", timeout=180_000)
    words = result_of(page, "float factor").inner_text()
    assert "checked by its test" in words and "not checked" not in words and "changed since" not in words
    author.step("validated again: every snippet checked")

    # ---- the stored file is the hand-tagged one, byte for byte; the history shows the end tag that moved
    revision = proposal.revisions.get(number=2)
    stored = blobs_read({"model.py": revision.files["model.py"]}, owner="test")["model.py"]
    assert stored == TAGGED.encode()
    assert revision.manifest["annotated_files"] == ["model.py"]
    author.goto(f"/contribute/{proposal.pk}/")
    page.locator("#revisions details.diff summary").last.click()
    history = page.locator("#revisions").inner_text()
    assert "Revision 2 by" in history and "snippets marked in the browser on toy.zip" in history
    assert re.search(r'-\s+# </paper2code name="float factor">', history), history
    assert re.search(r'\+\s+# </paper2code name="float factor">', history), history
    author.step("history diff")
    author.close()
