"""Injection and abuse (issue 14 item 4): CSRF on every form, hostile text in every free-text field that the
portal shows back, and throttles on sign-up, sign-in and every write API.

XSS: each payload of ``PAYLOADS`` goes into a field through the way it reaches the portal (a model's name,
a snippet's name, a predictions line's code, a test's output, a proposal's title and metadata, a comment, a
review, a file name in an uploaded archive); every page that shows the field is parsed (``InjectionFinder``)
and must hold no element or attribute the payload tried to inject, while the payload's text is shown.
"""

from __future__ import annotations

import html
import io
import zipfile
from html.parser import HTMLParser

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from contributions.models import Proposal
from contributions.services.proposals import comment_add
from contributions.services.review import proposal_review
from evaluation.models import TestResult
from leaderboard.services import leaderboard_refresh_run
from tests.factories import (
    CompletionFactory,
    EvaluationRunFactory,
    LanguageModelFactory,
    MaintainerFactory,
    SnippetFactory,
    TestResultFactory,
    UserFactory,
    make_benchmark,
    make_run,
)
from tests.factories.builders import proposal_approved, proposal_draft, proposal_validated
from tests.factories.contributions import EXAMPLE_TASK
from tests.test_authz_matrix import MATRIX, POST_ROUTES, client_for, world  # noqa: F401 (a fixture)

#: hostile text: markup that runs script, a script URL, an early end of a textarea, template syntax that
#: must stay text, a Unicode right-to-left override, a style element, the end of an HTML comment
PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "javascript:alert(1)",
    "</textarea><svg onload=alert(1)>",
    "'><a href=javascript:alert(1)>x</a>",
    "{{7*7}} {% debug %}",
    "\u202egnp.exe\u202c name",
    "<style>*{background:url(//evil.example)}</style>",
    "--><script>alert(1)</script><!--",
]


class InjectionFinder(HTMLParser):
    """Collects what a payload could have injected: inline scripts, event-handler attributes, script URLs,
    the payloads' image and style elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in: str | None = None
        self._script_type = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}=...>")
            if name in ("href", "src", "action", "formaction", "xlink:href") and (
                value or ""
            ).strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")
        if tag == "img" and values.get("src") == "x":
            self.found.append("<img src=x>")
        if tag in ("script", "style"):
            self._in = tag
            self._script_type = "json" if values.get("type") == "application/json" else "code"

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        # json_script's data (type application/json) escapes "<", so it cannot end its element early.
        if self._in == "script" and (self._script_type != "json" or "<" in data):
            self.found.append(f"<script>{data[:40]}")
        if self._in == "style" and "evil.example" in data:
            self.found.append(f"<style>{data[:40]}")


def injected(content: bytes) -> list[str]:
    finder = InjectionFinder()
    finder.feed(content.decode())
    return finder.found


#: the payloads that inject markup when written unescaped (the rest are text that must stay text)
MARKUP_PAYLOADS = [p for p in PAYLOADS if "<" in p]


@pytest.mark.parametrize("payload", MARKUP_PAYLOADS)
def test_the_finder_sees_each_markup_payload_written_raw_and_nothing_once_escaped(payload):
    assert injected(f"<p>{payload}</p>".encode()) != []
    assert injected(f"<p title='{html.escape(payload)}'>{html.escape(payload)}</p>".encode()) == []
    # In a data block only an escaped "<" keeps the element whole.
    assert injected(f'<script type="application/json">{payload}</script>'.encode()) != []


def check_pages(client: Client, urls: list[str], texts: list[str]) -> None:
    """Each page answers 200 with nothing injected, and each of ``texts`` is shown on one of them at least."""
    shown = ""
    for url in urls:
        cache.clear()
        response = client.get(url)
        assert response.status_code == 200, url
        assert injected(response.content) == [], url
        shown += html.unescape(response.content.decode())
    missing = [t for t in texts if t not in shown]
    assert not missing, f"not shown on {urls}: {missing}"


# --- model and snippet names (self-reported models, contributed tasks) -----------------------------------


@pytest.mark.django_db
def test_model_names_render_escaped_on_every_page_that_shows_them():
    rel, snippets = make_benchmark({"xss-paper": (None, [2, 3])})
    keys = []
    for i, payload in enumerate(PAYLOADS):
        model = LanguageModelFactory(key=f"xss-{i}", name=payload, developer=payload)
        leaderboard_refresh_run(run=make_run(snippets, {"xss-paper": "P F"}, release=rel, model=model))
        keys.append(model.key)
    run = model.runs.get()
    client = Client()
    client.force_login(MaintainerFactory(), backend="django.contrib.auth.backends.ModelBackend")
    compare = reverse("leaderboard:compare") + "?" + "&".join(f"models={k}" for k in keys[:4])
    urls = [
        reverse("leaderboard:board"),
        reverse("leaderboard:model_search") + "?q=xss",
        *(reverse("leaderboard:model", args=[k]) for k in keys),
        compare,
        reverse("leaderboard:paper", args=["xss-paper"]),
        reverse("leaderboard:errors"),
        reverse("leaderboard:contamination"),
        reverse("leaderboard:ablation"),
        reverse("evaluation:run_list"),
        reverse("evaluation:run_detail", args=[run.pk]),
        reverse("evaluation:model_list"),
    ]
    check_pages(client, urls, PAYLOADS)


@pytest.mark.django_db
def test_snippet_names_render_escaped_on_every_page_that_shows_them():
    rel, snippets = make_benchmark({"names-paper": (None, [2])})
    version = snippets["names-paper"][0].task_version
    named = [
        SnippetFactory(task_version=version, name=p, ordinal=i + 1, lines=2) for i, p in enumerate(PAYLOADS)
    ]
    model = LanguageModelFactory(key="names-model", name="Names Model")
    run = EvaluationRunFactory(model=model, release=rel)
    for snippet in named:
        TestResultFactory(
            completion=CompletionFactory(run=run, snippet=snippet), outcome=TestResult.Outcome.FAILED
        )
    leaderboard_refresh_run(run=run)
    urls = [
        reverse("leaderboard:paper", args=["names-paper"]),
        reverse("leaderboard:model", args=["names-model"]),
        reverse("evaluation:run_detail", args=[run.pk]),
        *(reverse("leaderboard:snippet", args=["names-paper", s.name]) + f"?id={s.pk}" for s in named),
    ]
    check_pages(Client(), urls, PAYLOADS)


# --- code and test output of predictions ------------------------------------------------------------------


@pytest.mark.django_db
def test_predicted_code_and_test_output_render_escaped_on_the_snippet_and_run_pages():
    rel, snippets = make_benchmark({"code-paper": (None, [2])})
    snippet = snippets["code-paper"][0]
    urls = []
    for i, payload in enumerate(PAYLOADS):
        model = LanguageModelFactory(key=f"code-{i}", name=f"Code {i}")
        run = EvaluationRunFactory(model=model, release=rel)
        completion = CompletionFactory(run=run, snippet=snippet, code=payload, raw_response=payload)
        TestResultFactory(
            completion=completion,
            outcome=TestResult.Outcome.FAILED,
            category="logic",
            exception_type="AssertionError",
            exception_message=payload,
            stdout_tail=payload,
            stderr_tail=payload,
        )
        leaderboard_refresh_run(run=run)
        urls.append(reverse("evaluation:run_detail", args=[run.pk]))
    urls.append(reverse("leaderboard:snippet", args=["code-paper", snippet.name]))
    check_pages(Client(), urls, PAYLOADS)


# --- proposals: title, metadata, comments, reviews, file names ----------------------------------------------


@pytest.mark.django_db
def test_proposal_text_comments_and_reviews_render_escaped(
    settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark.git"
    author, maintainer = UserFactory(), MaintainerFactory()
    author_client, maintainer_client = Client(), Client()
    author_client.force_login(author, backend="django.contrib.auth.backends.ModelBackend")
    maintainer_client.force_login(maintainer, backend="django.contrib.auth.backends.ModelBackend")
    for i, payload in enumerate(PAYLOADS):
        proposal = proposal_validated(
            author=author,
            task_key=f"xss-proposal-{i}",
            meta={"title": payload, "venue": payload, "github_url": f"https://github.com/x/{i}"},
        )
        comment_add(proposal=proposal, author=author, body=payload)
        # The comment form too: Markdown bodies go through the sanitiser.
        response = author_client.post(
            reverse("contributions:proposal_comment", args=[proposal.pk]),
            {"body": f"[link]({payload}) {payload}"},
        )
        assert response.status_code == 302
        proposal_review(proposal=proposal, reviewer=maintainer, decision="comment", body=payload)
        urls = [reverse("contributions:proposal_detail", args=[proposal.pk])]
        check_pages(author_client, [*urls, reverse("contributions:notifications")], [payload])
        check_pages(maintainer_client, [*urls, reverse("contributions:review_queue")], [payload])
    # Published, the title is on the public pages.
    published = proposal_approved(
        proposal_validated(author=author, task_key="xss-published", meta={"title": PAYLOADS[0]}),
        reviewer=maintainer,
        capture=django_capture_on_commit_callbacks,
    )
    assert published.state == Proposal.State.PUBLISHED
    check_pages(
        Client(),
        [reverse("leaderboard:papers"), reverse("leaderboard:paper", args=["xss-published"])],
        [PAYLOADS[0]],
    )


EXAMPLE_CODE = (EXAMPLE_TASK / "rmsnorm.py").read_text()
#: the snippet of the example task whose name the next test replaces (tags quote names with ")
RENAMED = "full rms over all features"


@pytest.mark.django_db
def test_snippet_names_of_an_uploaded_task_render_escaped(
    settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark.git"
    author, maintainer = UserFactory(), MaintainerFactory()
    client = Client()
    client.force_login(author, backend="django.contrib.auth.backends.ModelBackend")
    names = [p for p in PAYLOADS if '"' not in p]
    assert len(names) >= 6
    for i, name in enumerate(names):
        code = EXAMPLE_CODE.replace(RENAMED, name).encode()
        proposal = proposal_validated(author=author, task_key=f"named-{i}", **{"rmsnorm.py": code})
        check_pages(client, [reverse("contributions:proposal_detail", args=[proposal.pk])], [name])
    published = proposal_approved(proposal, reviewer=maintainer, capture=django_capture_on_commit_callbacks)
    assert published.state == Proposal.State.PUBLISHED
    snippet = published.published_version.snippets.get(name=names[-1])
    check_pages(
        Client(),
        [
            reverse("leaderboard:paper", args=[published.task_key]),
            reverse("leaderboard:snippet", args=[published.task_key, snippet.name]) + f"?id={snippet.pk}",
        ],
        [names[-1]],
    )


def zip_with(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, '# <paper2code name="s">\nx = 1\n# </paper2code name="s">\n')
        archive.writestr("paper2code_test.py", "def test():\n    pass\n")
    return buffer.getvalue()


@pytest.mark.django_db
def test_file_names_in_an_uploaded_archive_render_escaped():
    author = UserFactory()
    client = Client()
    client.force_login(author, backend="django.contrib.auth.backends.ModelBackend")
    proposal = proposal_draft(author)
    names = [f"{p.replace('/', '_')}.py" for p in PAYLOADS]
    upload = io.BytesIO(zip_with(names))
    upload.name = "task.zip"
    url = reverse("contributions:contribute_code", args=[proposal.pk])
    response = client.post(url, {"archive": upload})
    assert response.status_code in (200, 302, 400)
    assert injected(response.content) == []
    # Whatever step follows (the file roles, or the code step with the refusal) shows the names escaped.
    follow = client.get(response["Location"]) if response.status_code == 302 else response
    assert injected(follow.content) == []
    shown = html.unescape(response.content.decode() + follow.content.decode())
    assert all(name in shown for name in names), shown[-3000:]


# --- CSRF ----------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_post_route_refuses_a_post_without_the_csrf_token(world):  # noqa: F811
    """Each route the matrix POSTs to, by a signed-in maintainer and contributor A with the session cookie
    (the way a forged cross-site form arrives), is refused without the CSRF token."""
    accepted = []
    for name in POST_ROUTES:
        for req in (r for r in MATRIX[name] if r.method == "POST"):
            url = req.url(name, world)
            for role in ("a", "m"):
                client = Client(enforce_csrf_checks=True)
                client.force_login(world.users[role], backend="django.contrib.auth.backends.ModelBackend")
                response = client.post(url, req.data)
                # 401: an API endpoint that authenticates by token only ignores the session cookie.
                if response.status_code not in ((401, 403) if req.api else (403,)):
                    accepted.append(f"POST {url} as {role}: {response.status_code}")
    assert len(POST_ROUTES) > 25
    assert not accepted, "\n".join(accepted)


# --- throttling ----------------------------------------------------------------------------------------------


def api_views() -> list[tuple[str, type[APIView]]]:
    """(route name, DRF view class) of every API route."""

    def walk(patterns: list) -> list[tuple[str, type[APIView]]]:
        out = []
        for p in patterns:
            if isinstance(p, URLResolver):
                out += walk(p.url_patterns)
            else:
                view_class = getattr(p.callback, "view_class", None) or getattr(p.callback, "cls", None)
                if isinstance(view_class, type) and issubclass(view_class, APIView):
                    out.append((p.name, view_class))
        return out

    return walk(get_resolver().url_patterns)


WRITE_METHODS = {"post", "put", "patch", "delete"}


def test_every_write_api_endpoint_has_a_throttle():
    views = api_views()
    assert len(views) >= 10
    writers = [(n, v) for n, v in views if WRITE_METHODS & {m.lower() for m in v().allowed_methods}]
    assert writers, "no write API found: the walk is broken"
    unthrottled = [n for n, v in writers if not any(issubclass(t, BaseThrottle) for t in v.throttle_classes)]
    assert not unthrottled, f"write API endpoints without a throttle: {unthrottled}"


@pytest.mark.django_db
def test_sign_up_is_rate_limited_per_ip(settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "signup": "3/h/ip"}
    cache.clear()
    statuses = []
    for i in range(5):
        response = Client().post(
            reverse("account_signup"),
            {
                "email": f"new{i}@example.org",
                "password1": "a-long-test-password",
                "password2": "a-long-test-password",
            },
        )
        statuses.append(response.status_code)
    assert statuses[:3] == [302, 302, 302]
    assert statuses[3:] == [429, 429]


@pytest.mark.django_db
def test_failed_sign_ins_are_rate_limited_then_even_the_right_password_is_refused(settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login_failed": "10/m/ip,3/15m/key"}
    cache.clear()
    user = UserFactory()
    url = reverse("account_login")
    for _ in range(3):
        assert Client().post(url, {"login": user.email, "password": "wrong-password"}).status_code == 200
    refused = Client().post(url, {"login": user.email, "password": "a-long-test-password"})
    assert refused.status_code in (200, 429)
    assert "_auth_user_id" not in refused.client.session
    # Another account from the same address signs in: the lock is the account's, the IP's budget is not spent.
    other = UserFactory()
    signed_in = Client().post(url, {"login": other.email, "password": "a-long-test-password"})
    assert signed_in.status_code == 302
    assert "_auth_user_id" in signed_in.client.session


@pytest.mark.django_db
def test_failures_from_one_address_never_lock_the_account_out_from_another(settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login_failed": "10/m/ip,3/15m/key"}
    cache.clear()
    maintainer = UserFactory()
    url = reverse("account_login")
    for _ in range(6):
        Client(REMOTE_ADDR="203.0.113.7").post(url, {"login": maintainer.email, "password": "wrong"})
    attacker = Client(REMOTE_ADDR="203.0.113.7").post(
        url, {"login": maintainer.email, "password": "a-long-test-password"}
    )
    assert "_auth_user_id" not in attacker.client.session
    owner = Client(REMOTE_ADDR="198.51.100.20").post(
        url, {"login": maintainer.email, "password": "a-long-test-password"}
    )
    assert owner.status_code == 302 and "_auth_user_id" in owner.client.session
