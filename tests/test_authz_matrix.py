"""The authorisation matrix: every URL pattern of the site, requested by four roles, answers as this table says.

The roles: a visitor (anonymous), contributor A (who owns the proposals, the API token and the run upload
below), another contributor B, and a maintainer (the "maintainers" group, not staff). Each row of ``MATRIX``
names a route and lists requests (method, the URL's arguments, the status expected for each role in that
order). ``test_every_route_has_an_entry_in_the_matrix`` walks ``get_resolver().url_patterns``: a new route
without a row (or an entry in ``EXCLUDED`` with its reason) fails it, naming the route.

Every request runs in a savepoint that is rolled back, so a write by one role never changes what the next
role sees. ``POST_ROUTES`` (the routes with a POST row) feeds the CSRF test of tests/test_injection.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from contributions.models import Notification, Proposal
from evaluation.models import PredictionsUpload
from tests.factories import (
    LanguageModelFactory,
    MaintainerFactory,
    UserFactory,
    api_token_for,
    make_benchmark,
    make_run,
)
from tests.factories.builders import proposal_approved, proposal_draft, proposal_validated

ROLES = ("anon", "a", "b", "m")

#: the statuses of one request for (anonymous, contributor A, contributor B, maintainer)
Expect = tuple[int, int, int, int]


@dataclasses.dataclass(frozen=True)
class Req:
    method: str
    expect: Expect
    #: names of ``World`` attributes (or literals) that fill the route's arguments, in order
    args: tuple[str, ...] = ()
    api: bool = False
    data: dict[str, Any] = dataclasses.field(default_factory=dict)

    def url(self, name: str, world: World) -> str:
        return reverse(name, args=[getattr(world, a) if hasattr(world, a) else a for a in self.args])


def get(*expect: int, args: tuple[str, ...] = (), api: bool = False) -> Req:
    return Req("GET", expect, args, api)  # type: ignore[arg-type]


def post(*expect: int, args: tuple[str, ...] = (), api: bool = False, **data: Any) -> Req:
    return Req("POST", expect, args, api, data)  # type: ignore[arg-type]


# 302: to the sign-in page (or, for allauth pages of a signed-in user, on to the profile); 403: signed in but
# not allowed; 404: the object is not the viewer's to see (its existence is not told); 405: wrong method;
# 401: the API without credentials (token auth asks for them). POSTs carry no data unless the row says so:
# the right role gets the form back with its errors (200/400), the wrong ones are refused first.
MATRIX: dict[str, list[Req]] = {
    "healthz": [get(200, 200, 200, 200)],
    "status": [get(200, 200, 200, 200)],
    # --- accounts (django-allauth)
    "account_login": [get(200, 302, 302, 302), post(200, 302, 302, 302)],
    "account_logout": [get(302, 200, 200, 200), post(302, 302, 302, 302)],
    "account_inactive": [get(200, 200, 200, 200)],
    "account_signup": [get(200, 302, 302, 302), post(200, 302, 302, 302)],
    "account_reauthenticate": [get(302, 200, 200, 200), post(302, 200, 200, 200)],
    "account_request_reauthentication_code": [get(302, 200, 200, 200)],
    "account_confirm_reauthentication_code": [get(302, 302, 302, 302)],
    "account_email": [get(302, 200, 200, 200), post(302, 302, 302, 302)],
    "account_email_verification_sent": [get(200, 200, 200, 200)],
    "account_change_password": [get(302, 200, 200, 200), post(302, 200, 200, 200)],
    "account_set_password": [get(302, 302, 302, 302)],
    "account_reset_password": [get(200, 200, 200, 200), post(200, 200, 200, 200)],
    "account_confirm_login_code": [get(302, 302, 302, 302)],
    "account_confirm_email": [get(200, 200, 200, 200, args=("not-a-key",))],
    "account_reset_password_from_key_done": [get(200, 200, 200, 200)],
    "account_reset_password_from_key": [get(200, 200, 200, 200, args=("1", "not-a-key"))],
    "account_reset_password_done": [get(200, 200, 200, 200)],
    # --- API docs and schema
    "api-schema": [get(200, 200, 200, 200)],
    "api-docs": [get(200, 200, 200, 200)],
    "api-home": [get(200, 200, 200, 200)],
    "api-root": [get(200, 200, 200, 200)],
    # --- the API (token authentication; writes need an account)
    "api-run-upload": [get(401, 405, 405, 405, api=True), post(401, 400, 400, 400, api=True)],
    "api-runs": [get(200, 200, 200, 200, api=True), post(401, 405, 405, 405, api=True)],
    "api-run": [
        get(200, 200, 200, 200, args=("run_id",), api=True),
        post(401, 405, 405, 405, args=("run_id",), api=True),
    ],
    "api-run-results": [get(200, 200, 200, 200, args=("run_id",), api=True)],
    # an upload answered 202: its submitter's ("a") and maintainers'; another user is told there is none
    "api-upload": [
        get(401, 200, 404, 200, args=("upload_id",), api=True),
        post(401, 405, 405, 405, args=("upload_id",), api=True),
    ],
    "api-leaderboard": [get(200, 200, 200, 200, api=True), post(401, 405, 405, 405, api=True)],
    "api-leaderboard-papers": [get(200, 200, 200, 200, api=True)],
    "api-leaderboard-errors": [get(200, 200, 200, 200, api=True)],
    "api-leaderboard-snippets": [get(200, 200, 200, 200, api=True)],
    # without its ``models`` the comparison is a 400 naming them, for anyone
    "api-compare": [get(400, 400, 400, 400, api=True), post(401, 405, 405, 405, api=True)],
    "api-models": [get(200, 200, 200, 200, api=True), post(401, 405, 405, 405, api=True)],
    "api-model": [get(200, 200, 200, 200, args=("model_key",), api=True)],
    "api-papers": [get(200, 200, 200, 200, api=True), post(401, 405, 405, 405, api=True)],
    "api-paper": [
        get(200, 200, 200, 200, args=("paper_key",), api=True),
        get(404, 404, 404, 404, args=("submitted_key",), api=True),
        get(200, 200, 200, 200, args=("published_key",), api=True),
    ],
    "api-snippets": [get(200, 200, 200, 200, api=True)],
    "api-snippet": [get(200, 200, 200, 200, args=("snippet_id",), api=True)],
    "api-not-found": [get(404, 404, 404, 404, args=("no-such-thing/",), api=True)],
    # --- contributions
    "leaderboard:papers": [get(200, 200, 200, 200)],
    "contributions:release_list": [get(200, 200, 200, 200)],
    "contributions:release_detail": [get(200, 200, 200, 200, args=("release_name",))],
    "contributions:release_download": [get(200, 200, 200, 200, args=("release_name",))],
    "contributions:release_cut": [get(302, 403, 403, 200), post(302, 403, 403, 200)],
    "contributions:release_default": [
        get(405, 405, 405, 405, args=("release_name",)),
        post(302, 403, 403, 302, args=("release_name",)),
    ],
    "contributions:contribute": [get(200, 200, 200, 200)],
    "contributions:contribute_new": [get(302, 200, 200, 200), post(302, 400, 400, 400)],
    # A's draft: its author edits it, nobody else even learns it exists (a maintainer neither: drafts are
    # private until submitted).
    "contributions:contribute_meta": [
        get(302, 200, 404, 404, args=("draft_id",)),
        post(302, 400, 404, 404, args=("draft_id",)),
    ],
    "contributions:contribute_code": [
        get(302, 200, 404, 404, args=("draft_id",)),
        post(302, 400, 404, 404, args=("draft_id",)),
    ],
    "contributions:contribute_files": [
        get(302, 302, 404, 404, args=("draft_id",)),
        post(302, 302, 404, 404, args=("draft_id",)),
    ],
    "contributions:contribute_preview": [
        get(302, 302, 404, 404, args=("draft_id",)),
        post(302, 302, 404, 404, args=("draft_id",)),
    ],
    "contributions:contribute_submit": [
        get(302, 302, 404, 404, args=("draft_id",)),
        post(302, 302, 404, 404, args=("draft_id",)),
    ],
    # The author edits; a maintainer reads a submitted proposal's marks and changes nothing (404 on POST).
    "contributions:proposal_marks": [
        get(302, 200, 404, 404, args=("draft_id",)),
        get(302, 200, 404, 200, args=("submitted_id",)),
        post(302, 400, 404, 404, args=("draft_id",)),
        post(302, 400, 404, 404, args=("submitted_id",)),
    ],
    "contributions:review_queue": [get(302, 403, 403, 200)],
    "contributions:proposal_detail": [
        get(302, 200, 404, 404, args=("draft_id",)),
        get(302, 200, 404, 200, args=("submitted_id",)),
        get(302, 200, 404, 200, args=("published_id",)),
    ],
    "contributions:proposal_comment": [
        get(302, 405, 405, 405, args=("submitted_id",)),
        post(302, 400, 404, 400, args=("submitted_id",)),
        post(302, 302, 404, 302, args=("submitted_id",), body="A comment."),
    ],
    "contributions:proposal_review": [
        get(302, 405, 405, 405, args=("submitted_id",)),
        post(302, 403, 404, 400, args=("submitted_id",)),
    ],
    # Only the author withdraws: the maintainer is sent back with the refusal (the proposal stays).
    "contributions:proposal_withdraw": [
        get(302, 405, 405, 405, args=("submitted_id",)),
        post(302, 302, 404, 302, args=("submitted_id",)),
    ],
    "contributions:notifications": [get(302, 200, 200, 200)],
    "contributions:notifications_read": [get(302, 405, 405, 405), post(302, 302, 302, 302)],
    "contributions:profile": [get(302, 200, 200, 200), post(302, 302, 302, 302)],
    "contributions:api_tokens": [get(302, 200, 200, 200), post(302, 200, 200, 200)],
    # A's token: B and the maintainer are sent back to their own token list with "You have no such token"
    # (test_refused_writes_change_nothing checks that the token still works).
    "contributions:api_token_revoke": [
        get(302, 405, 405, 405, args=("token_id",)),
        post(302, 302, 302, 302, args=("token_id",)),
    ],
    # --- evaluation
    "evaluation:run_list": [get(200, 200, 200, 200)],
    "evaluation:run_upload": [get(302, 200, 200, 200), post(302, 400, 400, 400)],
    "evaluation:run_start": [get(302, 403, 403, 200), post(302, 403, 403, 400)],
    "evaluation:run_detail": [get(200, 200, 200, 200, args=("run_id",))],
    "evaluation:run_cancel": [
        get(405, 405, 405, 405, args=("run_id",)),
        post(302, 403, 403, 302, args=("run_id",)),
    ],
    "evaluation:run_rerun": [
        get(405, 405, 405, 405, args=("run_id",)),
        post(302, 403, 403, 302, args=("run_id",)),
    ],
    "evaluation:run_rejudge": [
        get(405, 405, 405, 405, args=("run_id",)),
        post(302, 403, 403, 302, args=("run_id",)),
    ],
    "evaluation:model_list": [get(302, 403, 403, 200)],
    "evaluation:model_add": [get(302, 403, 403, 200), post(302, 403, 403, 400)],
    "evaluation:model_edit": [
        get(302, 403, 403, 200, args=("model_id",)),
        post(302, 403, 403, 400, args=("model_id",)),
    ],
    "evaluation:model_test": [
        get(405, 405, 405, 405, args=("model_id",)),
        post(302, 403, 403, 302, args=("model_id",)),
    ],
    # --- leaderboard (public reads; a proposal's task shows only once published)
    "leaderboard:board": [get(200, 200, 200, 200), post(405, 405, 405, 405)],
    "leaderboard:model_search": [get(200, 200, 200, 200)],
    "leaderboard:model": [
        get(200, 200, 200, 200, args=("model_key",)),
        get(404, 404, 404, 404, args=("no-such-model",)),
    ],
    "leaderboard:compare": [get(200, 200, 200, 200)],
    "leaderboard:paper": [
        get(200, 200, 200, 200, args=("paper_key",)),
        get(404, 404, 404, 404, args=("submitted_key",)),
        get(200, 200, 200, 200, args=("published_key",)),
    ],
    "leaderboard:snippet_prompt": [get(200, 200, 200, 200, args=("published_key", "published_snippet"))],
    "leaderboard:snippet": [
        get(200, 200, 200, 200, args=("paper_key", "snippet_name")),
        get(200, 200, 200, 200, args=("published_key", "published_snippet")),
    ],
    # The maintainers' curation view of every snippet's statistics: maintainers only, as the review queue.
    "leaderboard:snippet_curation": [get(302, 403, 403, 200)],
    "leaderboard:errors": [get(200, 200, 200, 200)],
    "leaderboard:contamination": [get(200, 200, 200, 200)],
    "leaderboard:ablation": [get(200, 200, 200, 200)],
}

#: routes left out of ``MATRIX``, each with its reason
EXCLUDED: dict[str, str] = {
    "api-bench-trivial": "exists only with RCB_BENCH=1 (bench/leaderboard_load.py's baseline)",
}

#: Django's admin: staff only. Its patterns are covered by one rule (``test_the_admin_is_for_staff_only``):
#: every one of them sends each of the four roles (none is staff) to the sign-in page.
ADMIN_PREFIX = "admin/"

POST_ROUTES = sorted({name for name, reqs in MATRIX.items() for r in reqs if r.method == "POST"})


def route_names() -> Iterator[tuple[str, str]]:
    """(name, pattern) of every route, namespaced, admin first-level included."""

    def walk(patterns: list, prefix: str, namespace: str) -> Iterator[tuple[str, str]]:
        for p in patterns:
            if isinstance(p, URLResolver):
                ns = namespace + (f"{p.namespace}:" if p.namespace else "")
                yield from walk(p.url_patterns, prefix + str(p.pattern), ns)
            elif isinstance(p, URLPattern):
                yield namespace + (p.name or f"<unnamed {prefix}{p.pattern}>"), prefix + str(p.pattern)

    yield from walk(get_resolver().url_patterns, "", "")


def site_routes() -> list[str]:
    return [name for name, pattern in route_names() if not pattern.startswith(ADMIN_PREFIX)]


def test_every_route_has_an_entry_in_the_matrix():
    missing = [name for name in site_routes() if name not in MATRIX and name not in EXCLUDED]
    assert not missing, f"routes without an authorisation entry in tests/test_authz_matrix.py: {missing}"
    stale = sorted(set(MATRIX) - set(site_routes()))
    assert not stale, f"matrix entries for routes that no longer exist: {stale}"


# ----------------------------------------------------------------------------------------------- the world


@dataclasses.dataclass
class World:
    users: dict[str, Any]
    tokens: dict[str, str]
    draft_id: int
    submitted_id: int
    submitted_key: str
    published_id: int
    published_key: str
    run_id: int
    upload_id: int
    model_id: int
    model_key: str
    paper_key: str
    snippet_name: str
    snippet_id: int
    published_snippet: str
    release_name: str
    token_id: int


@pytest.fixture
def world(db, settings, tmp_path, django_capture_on_commit_callbacks) -> World:
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark.git"
    cache.clear()
    a, b, m = UserFactory(), UserFactory(), MaintainerFactory()
    release, snippets = make_benchmark({"matrix-paper": (None, [3, 2])}, release="matrix-release")
    model = LanguageModelFactory(key="matrix-model", name="Matrix Model")
    run = make_run(snippets, {"matrix-paper": "P F"}, model=model)
    draft = proposal_draft(a)
    submitted = proposal_validated(author=a)
    published = proposal_approved(
        proposal_validated(author=a), reviewer=m, capture=django_capture_on_commit_callbacks
    )
    assert published.state == Proposal.State.PUBLISHED
    tokens = {role: api_token_for(user) for role, user in (("a", a), ("b", b), ("m", m))}
    upload = PredictionsUpload.objects.create(
        requester=a, release=release, model_key="matrix-upload", sha256="0" * 64, data=b""
    )
    assert Notification.objects.filter(recipient=a).exists()
    return World(
        users={"anon": None, "a": a, "b": b, "m": m},
        tokens=tokens,
        draft_id=draft.pk,
        submitted_id=submitted.pk,
        submitted_key=submitted.task_key,
        published_id=published.pk,
        published_key=published.task_key,
        run_id=run.pk,
        upload_id=upload.pk,
        model_id=model.pk,
        model_key=model.key,
        paper_key="matrix-paper",
        snippet_name=snippets["matrix-paper"][0].name,
        snippet_id=snippets["matrix-paper"][0].pk,
        published_snippet=published.published_version.snippets.order_by("ordinal").first().name,
        release_name=release.name,
        token_id=a.api_tokens.first().pk,
    )


def client_for(world: World, role: str, *, api: bool, csrf: bool = False) -> Client:
    user = world.users[role]
    if api:
        client = APIClient(enforce_csrf_checks=csrf)
        if user is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens[role]}")
        return client
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return client


def rolled_back(request: Callable[[], Any]) -> Any:
    """The response of ``request``, with whatever it wrote to the database undone."""
    with transaction.atomic():
        response = request()
        transaction.set_rollback(True)
    return response


def send(client: Client, req: Req, url: str) -> Any:
    if req.method == "GET":
        return client.get(url)
    return client.post(url, req.data)


def test_every_route_answers_each_role_as_the_matrix_says(world):
    wrong = []
    checked = 0
    for name, reqs in MATRIX.items():
        for req in reqs:
            url = req.url(name, world)
            for role, expected in zip(ROLES, req.expect, strict=True):
                cache.clear()  # rate limits and page caches: each request stands alone
                client = client_for(world, role, api=req.api)
                response = rolled_back(lambda client=client, req=req, url=url: send(client, req, url))
                checked += 1
                if response.status_code != expected:
                    wrong.append(f"{req.method} {url} as {role}: {response.status_code}, expected {expected}")
    assert not wrong, "\n".join(wrong)
    assert checked == 4 * sum(len(r) for r in MATRIX.values())


def test_the_admin_is_for_staff_only(world):
    admin_patterns = [(n, p) for n, p in route_names() if p.startswith(ADMIN_PREFIX)]
    assert len(admin_patterns) > 20
    wrong = []
    for name, pattern in admin_patterns:
        url = "/" + _fill(pattern)
        for role in ROLES:
            response = client_for(world, role, api=False).get(url)
            if name == "admin:logout":
                ok = response.status_code == 302
            elif name == "admin:login":
                # The admin's form is allauth's (config/urls.py); a signed-in non-staff member is refused.
                ok = (
                    response.status_code == 403
                    if role != "anon"
                    else "/accounts/login/" in response["Location"]
                )
            else:
                ok = response.status_code == 302 and "/admin/login/" in response["Location"]
            if not ok:
                wrong.append(f"{name} {url} as {role}: {response.status_code}")
    assert not wrong, "\n".join(wrong)


def _fill(pattern: str) -> str:
    """A concrete path for an admin pattern: every parameter is "1" (nobody gets as far as the lookup)."""
    import re

    path = re.sub(r"<(?:\w+:)?\w+>", "1", pattern)
    path = re.sub(r"\(\?P<\w+>[^)]*\)", "1", path)
    return path.replace("^", "").replace("$", "").replace("\\", "")


def test_a_contributors_proposal_is_invisible_to_another_until_published(
    world, django_capture_on_commit_callbacks
):
    b = client_for(world, "b", api=False)
    m = MaintainerFactory()
    proposal = proposal_validated(author=world.users["a"], meta={"title": "A paper nobody else has seen"})
    paper_url = reverse("leaderboard:paper", args=[proposal.task_key])
    api_url = reverse("api-paper", args=[proposal.task_key])
    assert b.get(reverse("contributions:proposal_detail", args=[proposal.pk])).status_code == 404
    assert b.get(paper_url).status_code == 404
    assert client_for(world, "b", api=True).get(api_url).status_code == 404
    assert proposal.title not in b.get(reverse("leaderboard:papers")).content.decode()

    proposal_approved(proposal, reviewer=m, capture=django_capture_on_commit_callbacks)
    cache.clear()

    assert b.get(paper_url).status_code == 200
    assert client_for(world, "b", api=True).get(api_url).status_code == 200
    assert proposal.title in b.get(reverse("leaderboard:papers")).content.decode()
    # The review conversation stays between the author and the maintainers.
    assert b.get(reverse("contributions:proposal_detail", args=[proposal.pk])).status_code == 404


def test_refused_writes_change_nothing(world):
    """The writes the matrix answers with a redirect for the wrong role are refused, not carried out."""
    a_api = client_for(world, "a", api=True)
    for role in ("b", "m"):
        client_for(world, role, api=False).post(
            reverse("contributions:api_token_revoke", args=[world.token_id])
        )
    assert a_api.get(reverse("api-runs")).status_code == 200
    assert world.users["a"].api_tokens.filter(pk=world.token_id).exists()

    client_for(world, "m", api=False).post(
        reverse("contributions:proposal_withdraw", args=[world.submitted_id]), {"reason": "not mine"}
    )
    assert Proposal.objects.get(pk=world.submitted_id).state != Proposal.State.WITHDRAWN
