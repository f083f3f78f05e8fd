"""Accounts (django-allauth plus the portal's profile and API tokens) and the maintainer role, over HTTP."""

from __future__ import annotations

import re

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core import mail
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from contributions.models import ApiToken, Profile
from contributions.roles import is_maintainer
from contributions.services.accounts import api_token_create, token_digest
from contributions.validators import orcid_checksum
from evaluation.models import EvaluationRun
from tests.factories import (
    PASSWORD,
    LanguageModelFactory,
    MaintainerFactory,
    StaffUserFactory,
    UserFactory,
    jsonl,
    make_release,
)

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "another-long-password-42"
LINK = re.compile(r"https?://testserver(/accounts/[^\s]+)")


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    # allauth counts attempts in the cache: each test starts with none.
    cache.clear()
    yield
    cache.clear()


def link_in(message) -> str:
    found = LINK.search(message.body)
    assert found, message.body
    return found.group(1)


def sign_in(client, email: str, password: str):
    return client.post("/accounts/login/", {"login": email, "password": password})


def signed_in_user(client):
    return client.get("/accounts/profile/").wsgi_request.user


# --- sign-up, verification, sign-in, sign-out ----------------------------------------------------------


def test_sign_up_sends_a_confirmation_link_that_verifies_the_address_and_signs_in(client):
    response = client.post(
        "/accounts/signup/", {"email": "ada@example.org", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 302 and response["Location"] == "/accounts/confirm-email/"
    assert [m.to for m in mail.outbox] == [["ada@example.org"]]
    confirm = link_in(mail.outbox[0])
    assert confirm.startswith("/accounts/confirm-email/")
    assert not EmailAddress.objects.get(email="ada@example.org").verified

    # Opening the link only shows a button: a mail scanner's GET confirms nothing.
    assert client.get(confirm).status_code == 200
    assert not EmailAddress.objects.get(email="ada@example.org").verified
    client.post(confirm)
    assert EmailAddress.objects.get(email="ada@example.org").verified

    other = type(client)()
    response = sign_in(other, "ada@example.org", PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/accounts/profile/"
    assert signed_in_user(other).email == "ada@example.org"


def test_sign_in_is_refused_before_the_address_is_verified(client):
    client.post(
        "/accounts/signup/", {"email": "bob@example.org", "password1": PASSWORD, "password2": PASSWORD}
    )
    other = type(client)()
    response = sign_in(other, "bob@example.org", PASSWORD)
    assert response["Location"] == "/accounts/confirm-email/"
    assert not signed_in_user(other).is_authenticated


def test_sign_in_with_a_wrong_password_says_so_on_the_form(client):
    UserFactory(email="carol@example.org")
    response = sign_in(client, "carol@example.org", "not-the-password")
    assert response.status_code == 200
    assert "The email address and/or password you specified are not correct." in response.content.decode()
    assert not signed_in_user(client).is_authenticated


def test_sign_out_is_a_post_from_the_nav(client):
    user = UserFactory()
    client.force_login(user)
    html = client.get("/").content.decode()
    assert re.search(r'<form method="post" action="/accounts/logout/">.*Sign out', html, re.S)
    assert 'href="/accounts/profile/"' in html
    client.post("/accounts/logout/")
    assert not signed_in_user(client).is_authenticated


def test_the_nav_offers_sign_in_and_sign_up_to_visitors(client):
    html = client.get("/papers/").content.decode()
    assert 'href="/accounts/login/?next=/papers/"' in html
    assert 'href="/accounts/signup/"' in html
    assert "Sign out" not in html


def test_account_pages_use_the_site_layout_with_labelled_fields(client):
    html = client.get("/accounts/login/").content.decode()
    assert 'class="skip-link"' in html  # base.html
    assert '<label for="id_login">' in html and '<label for="id_password">' in html


@pytest.mark.parametrize(
    "url",
    [
        "/accounts/login/",
        "/accounts/signup/",
        "/accounts/password/reset/",
        "/accounts/password/reset/done/",
        "/accounts/email/",
        "/accounts/password/change/",
        "/accounts/logout/",
        "/accounts/profile/",
        "/accounts/tokens/",
    ],
)
def test_every_account_page_renders_in_the_site_layout(client, url):
    if url not in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"):
        client.force_login(UserFactory())
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="skip-link"' in html and "<h1>" in html
    # Every visible input has a label.
    for input_id in re.findall(r'<input (?:(?!type="hidden")[^>])*id="([^"]+)"', html):
        assert f'for="{input_id}"' in html, input_id


# --- password reset -------------------------------------------------------------------------------------


def test_password_reset_by_email_sets_a_new_password(client):
    UserFactory(email="dan@example.org")
    response = client.post("/accounts/password/reset/", {"email": "dan@example.org"})
    assert response.status_code == 302
    assert [m.to for m in mail.outbox] == [["dan@example.org"]]
    response = client.get(link_in(mail.outbox[0]))
    # allauth moves the key out of the URL into the session before showing the form.
    assert response.status_code == 302
    set_password = response["Location"]
    response = client.post(set_password, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response.status_code == 302

    other = type(client)()
    assert sign_in(other, "dan@example.org", PASSWORD).status_code == 200  # the old one no longer works
    assert sign_in(other, "dan@example.org", NEW_PASSWORD).status_code == 302
    assert signed_in_user(other).email == "dan@example.org"


# --- brute force ----------------------------------------------------------------------------------------


def test_after_five_failed_sign_ins_even_the_right_password_is_refused(client):
    UserFactory(email="eve@example.org")
    for _ in range(5):
        assert sign_in(client, "eve@example.org", "guess").status_code == 200
    response = sign_in(client, "eve@example.org", PASSWORD)
    assert response.status_code == 200
    assert "Too many failed login attempts" in response.content.decode()
    assert not signed_in_user(client).is_authenticated
    # The limit is per account: another account still signs in from the same address.
    UserFactory(email="frank@example.org")
    assert sign_in(client, "frank@example.org", PASSWORD).status_code == 302


def test_sign_ups_are_throttled_per_address(client):
    for n in range(5):
        data = {"email": f"u{n}@example.org", "password1": PASSWORD, "password2": PASSWORD}
        assert client.post("/accounts/signup/", data).status_code == 302
    data = {"email": "u5@example.org", "password1": PASSWORD, "password2": PASSWORD}
    assert client.post("/accounts/signup/", data).status_code == 429
    assert not get_user_model().objects.filter(email="u5@example.org").exists()


# --- profile --------------------------------------------------------------------------------------------


def test_orcid_checksum_follows_iso_7064_mod_11_2():
    assert orcid_checksum("000000021825009") == "7"
    assert orcid_checksum("000000021694233") == "X"


def test_profile_saves_name_affiliation_and_normalised_identifiers(client):
    user = UserFactory()
    client.force_login(user)
    data = {
        "display_name": "Ada Lovelace",
        "affiliation": "Analytical Engines Ltd",
        "orcid": "https://orcid.org/0000-0002-1694-233x",
        "github": "https://github.com/ada-l/",
    }
    response = client.post("/accounts/profile/", data)
    assert response.status_code == 302
    profile = Profile.objects.get(user=user)
    assert (profile.display_name, profile.affiliation) == ("Ada Lovelace", "Analytical Engines Ltd")
    assert (profile.orcid, profile.github) == ("0000-0002-1694-233X", "ada-l")
    assert 'value="0000-0002-1694-233X"' in client.get("/accounts/profile/").content.decode()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("orcid", "0000-0002-1825-0098", "check digit is wrong (expected 7)"),
        ("orcid", "0000-0002-1825", "Enter an ORCID iD as 0000-0000-0000-000X"),
        ("github", "-ada", "Enter a GitHub user name"),
        ("github", "ada--l", "Enter a GitHub user name"),
        ("github", "a" * 40, "Enter a GitHub user name"),
        ("github", "ada_l", "Enter a GitHub user name"),
    ],
)
def test_profile_refuses_a_bad_identifier_with_an_error_on_its_field(client, field, value, message):
    user = UserFactory()
    client.force_login(user)
    response = client.post("/accounts/profile/", {"display_name": "X", field: value})
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == [field] and message in errors[field][0]
    html = response.content.decode()
    assert f'id="id_{field}_error"' in html and 'aria-invalid="true"' in html
    assert not Profile.objects.filter(user=user, display_name="X").exists()


def test_profile_input_is_escaped_on_the_page(client):
    user = UserFactory()
    client.force_login(user)
    client.post("/accounts/profile/", {"display_name": "<script>alert(1)</script>"})
    html = client.get("/accounts/profile/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# --- API tokens -----------------------------------------------------------------------------------------


def test_a_new_token_has_a_copy_button_served_by_a_static_script_the_csp_allows(client):
    client.force_login(UserFactory())

    response = client.post("/accounts/tokens/", {"name": "laptop"})

    html = response.content.decode()
    button = re.search(r'<button type="button"[^>]*data-copy="new-token"[^>]*>Copy the token</button>', html)
    assert button and 'aria-controls="new-token-copied"' in button.group(0)
    assert 'id="new-token-copied" role="status"' in html
    script = re.search(r'<script src="(/static/js/forms\.js)" defer></script>', html)
    assert script and "<script>" not in html  # no inline script: the CSP allows only the site's files
    assert "script-src 'self'" in response["Content-Security-Policy"]
    # What the button does in a browser: tests/contributions/test_browser_forms.py.
    assert "data-copy" not in client.get("/accounts/tokens/").content.decode()  # only for a new token


def test_a_token_is_shown_once_stored_hashed_and_authenticates_the_upload_api(client):
    user = UserFactory()
    make_release()
    LanguageModelFactory(key="m1", self_reported=True, owner=user)
    client.force_login(user)
    response = client.post("/accounts/tokens/", {"name": "laptop"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    secret = re.search(r'id="new-token"[^>]*value="(rcb_[^"]+)"', response.content.decode()).group(1)
    token = ApiToken.objects.get(user=user)
    assert token.name == "laptop" and token.digest == token_digest(secret) and secret not in token.digest
    # Listed afterwards by name and prefix only.
    html = client.get("/accounts/tokens/").content.decode()
    assert "laptop" in html and secret not in html and token.prefix in html

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    upload = {"model": "m1", "release": "r1", "file": SimpleUploadedFile("p.jsonl", jsonl())}
    upload["file"] = SimpleUploadedFile("p.jsonl", jsonl({"task": "alpha", "snippet": "a1", "code": "x"}))
    assert api.post("/api/v1/runs/upload/", upload, format="multipart").status_code == 201
    assert EvaluationRun.objects.get().requester == user
    token.refresh_from_db()
    assert token.last_used_at is not None

    response = client.post(f"/accounts/tokens/{token.pk}/revoke/")
    assert response.status_code == 302 and not ApiToken.objects.exists()
    upload["file"] = SimpleUploadedFile("p.jsonl", jsonl({"task": "alpha", "snippet": "a1", "code": "x"}))
    assert api.post("/api/v1/runs/upload/", upload, format="multipart").status_code == 401


def test_nobody_revokes_another_users_token(client):
    owner, other = UserFactory(), UserFactory()
    token = api_token_create(user=owner, name="ci").token
    client.force_login(other)
    client.post(f"/accounts/tokens/{token.pk}/revoke/")
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_a_token_name_must_be_new_and_present(client):
    user = UserFactory()
    api_token_create(user=user, name="ci")
    client.force_login(user)
    for name, message in (("ci", "already have a token with this name"), ("  ", "This field is required")):
        response = client.post("/accounts/tokens/", {"name": name})
        assert message in response.context["form"].errors["name"][0]
    assert ApiToken.objects.filter(user=user).count() == 1


def test_a_forged_or_foreign_looking_token_is_refused():
    make_release()
    api = APIClient()
    for key in ("rcb_" + "A" * 43, "0123456789abcdef0123456789abcdef01234567"):
        api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert api.post("/api/v1/runs/upload/", {"release": "r1"}, format="multipart").status_code == 401


# --- roles ----------------------------------------------------------------------------------------------


def test_the_maintainers_group_grants_review_release_and_model_permissions():
    codenames = set(Group.objects.get(name="maintainers").permissions.values_list("codename", flat=True))
    assert {"review_proposal", "cut_release", "add_languagemodel", "change_languagemodel"} <= codenames
    maintainer, member = MaintainerFactory(), UserFactory()
    assert is_maintainer(maintainer) and not maintainer.is_staff
    assert not is_maintainer(member)


@pytest.mark.parametrize("url", ["/runs/models/", "/runs/models/add/"])
def test_maintainer_pages_admit_maintainers_and_staff_and_refuse_members(client, url):
    client.force_login(UserFactory())
    assert client.get(url).status_code == 403
    client.force_login(MaintainerFactory())
    assert client.get(url).status_code == 200
    client.force_login(StaffUserFactory())
    assert client.get(url).status_code == 200


def test_templates_know_who_may_take_maintainer_actions(client):
    for user, expected in ((UserFactory(), False), (MaintainerFactory(), True), (StaffUserFactory(), True)):
        client.force_login(user)
        assert client.get("/papers/").context["user_is_maintainer"]() is expected
    client.logout()
    assert client.get("/papers/").context["user_is_maintainer"]() is False


@pytest.mark.parametrize(
    "url", ["/runs/upload/", "/runs/models/", "/accounts/profile/", "/accounts/tokens/", "/admin/"]
)
def test_pages_for_signed_in_users_send_visitors_to_the_site_sign_in(client, url):
    response = client.get(url, follow=True)
    first_hop = response.redirect_chain[0][0] if response.redirect_chain else ""
    final = response.redirect_chain[-1][0]
    assert "/admin/login/" not in final and final.startswith("/accounts/login/?next="), first_hop
    assert response.status_code == 200


# --- demo -----------------------------------------------------------------------------------------------


def test_demo_accounts_are_created_verified_and_printed(client, tmp_path, capsys):
    from leaderboard.management.commands.load_demo import Command

    command = Command()
    command._load_accounts()
    out = capsys.readouterr().out
    for email, password, maintainer, _ in (
        ("maintainer@example.org", "demo-maintainer-password", True, ""),
        ("contributor@example.org", "demo-contributor-password", False, ""),
    ):
        assert f"sign in as {email} with password {password}" in out
        user = get_user_model().objects.get(email=email)
        assert is_maintainer(user) is maintainer
        other = type(client)()
        assert sign_in(other, email, password).status_code == 302
    command._load_accounts()  # idempotent
    assert get_user_model().objects.filter(email__endswith="@example.org").count() == 2


def test_load_demo_creates_no_accounts_with_debug_off(capsys, tmp_path):
    call_command("load_demo", examples=tmp_path / "absent")
    assert "demo accounts: skipped (DEBUG is off" in capsys.readouterr().out
    assert not get_user_model().objects.exists()


def test_the_maintainers_group_and_its_permissions_come_back_after_a_flush(transactional_db):
    from django.contrib.auth.models import Group
    from django.core.management import call_command

    from contributions.services.accounts import MAINTAINER_PERMISSIONS

    call_command("flush", interactive=False, verbosity=0)
    group = Group.objects.get(name="maintainers")
    assert set(group.permissions.values_list("codename", flat=True)) == {p[2] for p in MAINTAINER_PERMISSIONS}
    maintainer = MaintainerFactory()
    assert maintainer.has_perm("contributions.review_proposal")
    assert maintainer.has_perm("evaluation.change_languagemodel")
