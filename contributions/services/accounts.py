"""Write services of accounts: profiles, personal API tokens, and the accounts the demo creates.

Sign-up, sign-in, email verification and password reset are django-allauth's views; these services hold what
the portal adds. Reads are in ``contributions.selectors`` (``api_token_list``, ``profile_for``).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from contributions.models import ApiToken, Profile

#: the group whose permissions make a maintainer (created by migration 0006_maintainers_group and kept
#: complete after every migrate or flush by ``maintainers_group_ensure``)
MAINTAINERS_GROUP = "maintainers"
#: what the group may do: (app label, model, codename, name), as Django names default permissions
MAINTAINER_PERMISSIONS = (
    ("contributions", "proposal", "review_proposal", "Can review proposals"),
    ("contributions", "proposal", "cut_release", "Can cut releases"),
    ("contributions", "proposal", "view_proposal", "Can view proposal"),
    ("evaluation", "languagemodel", "add_languagemodel", "Can add language model"),
    ("evaluation", "languagemodel", "change_languagemodel", "Can change language model"),
    ("evaluation", "languagemodel", "view_languagemodel", "Can view language model"),
    ("evaluation", "evaluationrun", "change_evaluationrun", "Can change evaluation run"),
    ("evaluation", "evaluationrun", "view_evaluationrun", "Can view evaluation run"),
)
#: tokens one user may hold at once: enough for a few machines, few enough to review on one page
MAX_TOKENS_PER_USER = 10
#: marks our secrets (secret scanners and people recognise them); the rest is 256 random bits
TOKEN_MARK = "rcb_"
_PREFIX_CHARS = len(TOKEN_MARK) + 6


@dataclass(frozen=True)
class NewApiToken:
    """A token just created: ``secret`` exists only here (the database keeps its digest)."""

    token: ApiToken
    secret: str


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def profile_get_or_create(*, user: AbstractBaseUser) -> Profile:
    profile, _ = Profile.objects.get_or_create(user=user)
    return profile


@transaction.atomic
def profile_update(
    *, user: AbstractBaseUser, display_name: str, affiliation: str, orcid: str, github: str
) -> Profile:
    """Store the profile of ``user``; raises ``ValidationError`` (by field) for a bad ORCID iD or GitHub name.

    Callers pass normalised values (``contributions.validators.*_normalise``); the validators run here too, so
    no caller can store an unchecked identifier.
    """
    profile = profile_get_or_create(user=user)
    profile.display_name = display_name.strip()
    profile.affiliation = affiliation.strip()
    profile.orcid = orcid
    profile.github = github
    profile.full_clean(exclude=["user"])
    profile.save()
    return profile


@transaction.atomic
def api_token_create(*, user: AbstractBaseUser, name: str) -> NewApiToken:
    """A new token for ``user`` named ``name``; raises ``ValidationError`` on the ``name`` field when the name
    is blank or taken, or when the user already has ``MAX_TOKENS_PER_USER`` tokens."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name (where it will be used, say)."})
    # Lock the user's row so that two simultaneous requests cannot both pass the count check.
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    if ApiToken.objects.filter(user=user).count() >= MAX_TOKENS_PER_USER:
        raise ValidationError(
            {"name": f"You already have {MAX_TOKENS_PER_USER} tokens; revoke one you no longer use first."}
        )
    if ApiToken.objects.filter(user=user, name=name).exists():
        raise ValidationError({"name": "You already have a token with this name."})
    secret = TOKEN_MARK + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                user=user, name=name, prefix=secret[:_PREFIX_CHARS], digest=token_digest(secret)
            )
    except IntegrityError:
        raise ValidationError({"name": "You already have a token with this name."}) from None
    return NewApiToken(token=token, secret=secret)


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> bool:
    """Delete ``user``'s token ``token_id``; False when the user has no such token (another's included)."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return bool(deleted)


def api_token_authenticate(*, secret: str) -> ApiToken | None:
    """The token whose secret is ``secret`` (with its user), or None; records when it was last used."""
    if not secret.startswith(TOKEN_MARK) or len(secret) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(digest=token_digest(secret)).first()
    if token is None:
        return None
    now = timezone.now()
    # At most one write a minute per token: a busy script does not turn every request into an UPDATE.
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


@transaction.atomic
def account_create_verified(
    *, email: str, password: str, maintainer: bool = False, display_name: str = ""
) -> AbstractBaseUser:
    """An active account signed in by ``email`` (verified, primary) with ``password``, in the maintainers
    group when ``maintainer``. Idempotent: an existing account of that address gets the password and group.

    For the demo and operators' scripts: it skips the sign-up's email round trip on purpose.
    """
    email = email.strip().lower()
    users = get_user_model()
    user = users.objects.filter(email__iexact=email).first()
    if user is None:
        username = email.split("@", 1)[0][:100] or "user"
        base, n = username, 1
        while users.objects.filter(username=username).exists():
            n += 1
            username = f"{base}{n}"
        user = users.objects.create_user(username=username, email=email)
    user.set_password(password)
    user.is_active = True
    user.save()
    EmailAddress.objects.update_or_create(
        user=user, email=email, defaults={"verified": True, "primary": True}
    )
    if maintainer:
        user.groups.add(maintainers_group_ensure())
    if display_name:
        profile = profile_get_or_create(user=user)
        profile.display_name = display_name
        profile.save(update_fields=["display_name", "updated_at"])
    return user


def maintainers_group_ensure(*, using: str = "default") -> Group:
    """The "maintainers" group with every permission of ``MAINTAINER_PERMISSIONS`` (created when missing).

    Idempotent. Runs after every ``migrate`` (post_migrate, see ``ContributionsConfig.ready``), so a database
    flushed by ``flush`` or by a transactional test gets the group back with the permissions and content
    types Django recreates. Permissions are addressed by content type natural key, so this app imports no
    model of the apps above it.
    """
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    group, _ = Group.objects.using(using).get_or_create(name=MAINTAINERS_GROUP)
    wanted = []
    for app_label, model, codename, name in MAINTAINER_PERMISSIONS:
        content_type, _ = ContentType.objects.db_manager(using).get_or_create(
            app_label=app_label, model=model
        )
        permission, _ = Permission.objects.db_manager(using).get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )
        wanted.append(permission)
    group.permissions.add(*wanted)
    return group
