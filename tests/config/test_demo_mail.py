"""The demo's mail (issue 22 item 9): with debug on (the demo) mail is printed as plain text, so that a
confirmation link can be copied whole from the terminal, and the page after sign-up tells where the mail went
instead of advising a spam folder no mail reaches. A proposal's notification email prints the same way, its
link absolute (issue 34 item 3)."""

from __future__ import annotations

import io
import re

import pytest
from django.core.mail import EmailMultiAlternatives

pytestmark = pytest.mark.django_db

LINK = "https://portal.example/accounts/confirm-email/" + "Mg:1uXyZa:" + "a" * 60 + "/"


def test_the_console_mailer_prints_the_link_whole_and_decoded():
    from config.mail import ReadableConsoleBackend

    stream = io.StringIO()
    message = EmailMultiAlternatives(
        subject="[ResearchCodeBench Hub] Please Confirm Your Email Address",
        body=f"Hello from ResearchCodeBench Hub!\n\nTo confirm, go to {LINK}\n\nThanks — the team\n",
        from_email="noreply@localhost",
        to=["ada@example.org"],
    )
    message.attach_alternative(f'<p><a href="{LINK}">confirm</a></p>', "text/html")
    ReadableConsoleBackend(stream=stream).send_messages([message])
    printed = stream.getvalue()
    assert LINK in printed.splitlines()[6]
    assert "=\n" not in printed and "=3D" not in printed and "Thanks — the team" in printed
    assert "To: ada@example.org" in printed and "[also sent as text/html" in printed


def test_debug_mail_is_printed_by_the_readable_mailer():
    from pathlib import Path

    settings_text = (Path(__file__).resolve().parents[2] / "config" / "settings.py").read_text()
    debug_branch = settings_text.split("if DEBUG:\n    MAILERS", 1)[1].split("else:", 1)[0]
    assert "config.mail.ReadableConsoleBackend" in debug_branch


def test_the_page_after_sign_up_names_the_terminal_not_a_spam_folder(client, settings):
    settings.MAILERS = {"default": {"BACKEND": "config.mail.ReadableConsoleBackend"}}
    html = client.get("/accounts/confirm-email/").content.decode()
    assert "spam" not in html.lower()
    assert re.search(r"printed, as plain text, in the terminal", html)


def test_with_real_mail_the_page_keeps_the_inbox_advice(client, settings):
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend"}}
    html = client.get("/accounts/confirm-email/").content.decode()
    assert "spam folder" in html and "terminal" not in html


def test_a_proposal_notification_prints_its_status_and_an_absolute_link_whole(
    mailoutbox, django_capture_on_commit_callbacks
):
    from django.conf import settings

    from config.mail import ReadableConsoleBackend
    from contributions.services import proposal_validation_finish, proposal_validation_start
    from tests.factories import UserFactory
    from tests.factories.builders import proposal_submitted, validation_report

    proposal = proposal_submitted(UserFactory(email="ada@example.org"))
    revision = proposal.revisions.get()
    proposal_validation_start(revision=revision)
    with django_capture_on_commit_callbacks(execute=True):
        proposal_validation_finish(revision=revision, report=validation_report())
    (mail,) = mailoutbox
    stream = io.StringIO()
    ReadableConsoleBackend(stream=stream).send_messages([mail])
    printed = stream.getvalue().splitlines()
    assert f"Open the proposal: {settings.RCB_SITE_URL}/contribute/{proposal.pk}/" in printed
    assert settings.RCB_SITE_URL.startswith(("http://", "https://"))
    assert "Status: Ready for review" in printed and "The maintainers' turn." in printed
