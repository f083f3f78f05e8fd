"""The mailer of debug and the demo: mail printed for a person to read, and which mailers keep mail on
this machine (the pages after sign-up and a password reset say where the mail went)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.mail.backends import console

#: Mailers that deliver nothing off this machine.
LOCAL_BACKENDS = frozenset(
    {
        "config.mail.ReadableConsoleBackend",
        "django.core.mail.backends.console.EmailBackend",
        "django.core.mail.backends.locmem.EmailBackend",
        "django.core.mail.backends.filebased.EmailBackend",
        "django.core.mail.backends.dummy.EmailBackend",
    }
)


def mail_stays_local() -> bool:
    """Whether the default mailer keeps mail on this machine (no inbox, no spam folder to look in)."""
    mailers = getattr(settings, "MAILERS", None) or {}
    backend = (mailers.get("default") or {}).get("BACKEND") or getattr(settings, "EMAIL_BACKEND", "")
    return backend in LOCAL_BACKENDS


class ReadableConsoleBackend(console.EmailBackend):
    """Django's console mailer, writing each message as a person reads it: sender, recipients, subject and
    the plain-text body as written (Django's own writes the MIME encoding, quoted-printable, whose "="
    line breaks split links), then one line per alternative part (an HTML version) naming its type."""

    def write_message(self, message: Any) -> None:
        lines = [
            f"From: {message.from_email}",
            f"To: {', '.join(message.to)}",
            *([f"Cc: {', '.join(message.cc)}"] if message.cc else []),
            f"Subject: {message.subject}",
            "",
            str(message.body).rstrip("\n"),
        ]
        for alternative in getattr(message, "alternatives", None) or []:
            content, mimetype = alternative[0], alternative[1]
            lines.append(f"[also sent as {mimetype}, {len(content)} characters]")
        self.stream.write("\n".join(lines) + "\n" + "-" * 79 + "\n")
