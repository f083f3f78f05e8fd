"""Factories of accounts: a signed-up member and a maintainer (staff)."""

from __future__ import annotations

import factory
from django.conf import settings

#: the password every factory-made account has unless a test gives another (long enough for the validators)
PASSWORD = "a-long-test-password"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = settings.AUTH_USER_MODEL

    username = factory.Sequence(lambda n: f"user{n}")
    # A Transformer: a password a test passes is hashed too.
    password = factory.django.Password(PASSWORD)


class StaffUserFactory(UserFactory):
    username = factory.Sequence(lambda n: f"staff{n}")
    is_staff = True
