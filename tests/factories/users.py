"""Factories of accounts: a signed-up member (verified email address), a staff user and a maintainer."""

from __future__ import annotations

import factory
from allauth.account.models import EmailAddress
from django.conf import settings

from contributions.services.accounts import maintainers_group_ensure

#: the password every factory-made account has unless a test gives another (long enough for the validators)
PASSWORD = "a-long-test-password"


class UserFactory(factory.django.DjangoModelFactory):
    """An account as sign-up leaves it once its email address is confirmed: it can sign in by email."""

    class Meta:
        model = settings.AUTH_USER_MODEL
        # The hooks write other rows (address, group); the user itself needs no second save.
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    # A Transformer: a password a test passes is hashed too.
    password = factory.django.Password(PASSWORD)

    @factory.post_generation
    def verified_email(user, create: bool, extracted: bool | None, **kwargs) -> None:
        """``verified_email=False`` leaves the address unconfirmed (sign-in is then refused)."""
        if create and user.email:
            EmailAddress.objects.create(
                user=user, email=user.email, primary=True, verified=extracted is not False
            )


class StaffUserFactory(UserFactory):
    username = factory.Sequence(lambda n: f"staff{n}")
    is_staff = True


class MaintainerFactory(UserFactory):
    """A member of the "maintainers" group (created by a migration): reviews, not staff."""

    username = factory.Sequence(lambda n: f"maintainer{n}")

    @factory.post_generation
    def maintainer_group(user, create: bool, extracted: object, **kwargs) -> None:
        if create:
            user.groups.add(maintainers_group_ensure())


def api_token_for(user) -> str:
    """A new personal API token's secret for ``user`` (``Authorization: Token <secret>``)."""
    from contributions.services.accounts import api_token_create

    return api_token_create(user=user, name=f"test token {user.api_tokens.count() + 1}").secret
