"""static/js/forms.js in Chromium (issue 34 item 6): a form answered with errors puts the keyboard focus on
the first field in error, or on the form's error list when the error is not a field's; a new API token's
copy button (hidden without the script) copies the token and says so."""

from __future__ import annotations

import pytest

from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FOCUSED = """() => {
  const e = document.activeElement;
  return {id: e.id, invalid: e.getAttribute('aria-invalid'), errors: e.matches('.form-errors, .errorlist')};
}"""


def test_focus_lands_on_what_to_fix_and_a_new_token_is_copied_by_its_button(live_server, browser):
    user = UserFactory()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()

    # A wrong password is the form's error, not a field's: the focus goes to the error list.
    page.goto(f"{live_server.url}/accounts/login/?next=/accounts/tokens/")
    page.fill("#id_login", user.email)
    page.fill("#id_password", "not-the-password")
    page.locator("main form button[type=submit]").last.click()
    page.wait_for_load_state()
    assert page.evaluate(FOCUSED)["errors"], page.evaluate(FOCUSED)

    page.fill("#id_login", user.email)
    page.fill("#id_password", PASSWORD)
    page.locator("main form button[type=submit]").last.click()
    page.wait_for_url("**/accounts/tokens/")

    # A token name too long for its field: the focus goes to that field.
    token_form = page.locator("main form[method=post]").filter(has=page.locator("#id_name"))
    page.locator("#id_name").evaluate("(e, v) => { e.removeAttribute('maxlength'); e.value = v; }", "x" * 500)
    token_form.locator("button[type=submit]").click()
    page.wait_for_load_state()
    focused = page.evaluate(FOCUSED)
    assert focused == {"id": "id_name", "invalid": "true", "errors": False}, focused

    page.fill("#id_name", "laptop")
    token_form.locator("button[type=submit]").click()
    copy = page.get_by_role("button", name="Copy the token")
    copy.wait_for()
    assert copy.is_visible()
    secret = page.locator("#new-token").input_value()
    copy.click()
    page.wait_for_function("() => document.getElementById('new-token-copied').textContent === 'Copied.'")
    assert page.evaluate("() => navigator.clipboard.readText()") == secret
    context.close()
