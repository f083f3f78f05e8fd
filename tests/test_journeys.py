"""The three users' journeys in Chromium (issue 14 item 1), on the live server and the real database:

(a) a visitor browses the board, sorts, switches the contamination rule, compares two models, opens a
    model, a paper and a snippet's diff, and downloads the board's CSV;
(b) an author signs up, confirms the address from the email the portal sent, submits an example task as a
    zip through the form, watches a real worker validate it and answers a maintainer's review comment with
    a new revision;
(c) the maintainer approves that revision, the task appears on the papers page, the portal evaluates the
    active model served by the demo's fake LLM (``manage.py serve_fake_llm``) on it and the model's score on
    the new paper shows on the paper's page and on the board.

A JavaScript console error, a failed request or a response of 400 or more (other than the ones a step
expects) fails a journey. Every page a journey visits also passes the accessibility audit of
tests/test_accessibility.py at two widths, a desktop's and a phone's: axe-core (a violation of any impact
fails), the keyboard at the journey's own width, no blank page past the footer, and no sideways scrolling
at the phone's. Each step leaves a screenshot at each width under ``$RCB_VAR_DIR/journeys/``
(var/test/journeys/ in ``make test``).
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core import mail
from django.db import connections

from tests.conftest import REPO, chromium
from tests.evaluation.test_demo_fake_llm import fake_server
from tests.test_accessibility import (
    DESKTOP,
    PHONE,
    audit,
    axe_passes,
    board_readable_at_phone_width,
    ends_at_the_footer,
    fits_the_width,
)

__all__ = ["fake_server"]  # the demo's fake LLM (manage.py serve_fake_llm), used as a fixture below

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for every journey of this module (each journey opens a context of its own and closes it):
    starting Playwright's driver and the browser costs about 1.5 s a test. Every test here is a browser test
    on the transactional database, so Playwright's event loop running across them changes nothing they see."""
    with chromium() as launched:
        yield launched


@pytest.fixture(autouse=True)
def _close_connections_after_each_journey() -> Iterator[None]:
    """As a per-test browser does on closing (tests/conftest.py, ``chromium``): the connection the test's ORM
    calls opened under Playwright's loop ends with the test."""
    yield
    connections.close_all()


SHOTS = Path(os.environ.get("RCB_VAR_DIR", REPO / "var" / "test")) / "journeys"
EXAMPLE = REPO / "examples" / "pset" / "rmsnorm"


class Journey:
    """A page that records what goes wrong in the browser, and names each step with a screenshot."""

    def __init__(self, browser: Any, name: str, base_url: str, *, width: int | None = None) -> None:
        self.width = width or DESKTOP
        #: the width a step also checks on the same page: none for a journey given its width, which the test
        #: walks at both widths itself (its steps differ by width)
        self.other_width = None if width else PHONE
        self.context = browser.new_context(
            viewport={"width": self.width, "height": 900}, accept_downloads=True
        )
        self.page = self.context.new_page()
        self.name = name
        self.base_url = base_url
        self.problems: list[str] = []
        #: (method, path) of responses >= 400 that a step provokes on purpose
        self.expected_errors: set[tuple[str, str]] = set()
        self.steps = 0
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))
        self.failed: list[tuple[str, str]] = []
        self.downloads: set[str] = set()
        self.page.on("requestfailed", self._failed)
        self.page.on("download", lambda download: self.downloads.add(download.url))
        self.page.on("response", self._response)
        SHOTS.mkdir(parents=True, exist_ok=True)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.problems.append(f"console error on {self.page.url}: {message.text}")

    def _failed(self, request: Any) -> None:
        # The browser's own request for the site's icon is aborted when a step navigates before it ends: no
        # page asked for it, and nothing of the page failed.
        if request.url.endswith("/static/favicon.svg") and request.failure == "net::ERR_ABORTED":
            return
        self.failed.append(
            (request.url, f"request failed: {request.method} {request.url}: {request.failure}")
        )

    def _problems(self) -> list[str]:
        # A navigation that turns into a download is handed to the download manager: Chromium reports it
        # as aborted, which is how a download ends, not a failure.
        return self.problems + [text for url, text in self.failed if url not in self.downloads]

    def _response(self, response: Any) -> None:
        if response.status >= 400:
            path = response.url.removeprefix(self.base_url).split("?")[0]
            if (response.request.method, path) not in self.expected_errors:
                self.problems.append(f"{response.status} for {response.request.method} {response.url}")

    def goto(self, path: str) -> None:
        self.page.goto(f"{self.base_url}{path}")

    def step(self, label: str, *, targets: list[str] = (), accessible: bool = True) -> None:
        """No browser problem so far (failing at the step where the first one appeared); then, at the
        journey's width and (``other_width``) at ``PHONE``, a screenshot named after the step
        and the width and the page as it is now checked: axe, no blank page past the footer and, at
        ``PHONE``, no sideways scrolling (``fits``); the keyboard walk at the journey's own width only.
        ``accessible=False`` (a step that downloads, the page left as it was) keeps the screenshots alone."""
        self.steps += 1
        # htmx settled: no request in flight and its indicators faded out (mid-fade text fails contrast).
        self.page.wait_for_function(
            """() => !document.querySelector('.htmx-request') && [...document.querySelectorAll('.htmx-indicator')]
                     .every(e => getComputedStyle(e).opacity === '0')"""
        )
        shot = f"{self.name}-{self.steps:02d}-" + re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
        self.page.screenshot(path=str(SHOTS / f"{shot}-{self.width}.png"), full_page=True)
        assert not self._problems(), f"{self.name}, step {label!r}:\n" + "\n".join(self._problems())
        if accessible:
            audit(self.page, targets=list(targets))
            self.fits()
        # The other width, on the same page: resizing costs far less than walking the journey twice.
        other = self.other_width
        if other is None:
            return
        self.page.set_viewport_size({"width": other, "height": 900})
        self.page.screenshot(path=str(SHOTS / f"{shot}-{other}.png"), full_page=True)
        if accessible:
            axe_passes(self.page)
            self.fits()
        self.page.set_viewport_size({"width": self.width, "height": 900})

    def fits(self) -> None:
        """The page ends at its footer and, at ``PHONE``, does not scroll sideways."""
        ends_at_the_footer(self.page)
        if self.page.viewport_size["width"] == PHONE:
            fits_the_width(self.page)

    def close(self) -> None:
        self.context.close()
        assert not self._problems(), f"{self.name}:\n" + "\n".join(self._problems())


def test_a_journey_fails_on_a_console_error_a_failed_request_and_an_error_response(live_server, browser):
    journey = Journey(browser, "self-check", live_server.url)
    journey.page.route("**/unreachable/**", lambda route: route.abort())
    journey.goto("/accounts/login/")
    journey.page.evaluate("() => console.error('boom')")
    journey.page.evaluate("() => fetch('/unreachable/x').catch(() => null)")
    journey.page.evaluate("() => fetch('/no-such-page/')")
    journey.page.wait_for_timeout(200)
    found = "\n".join(journey._problems())
    assert "console error" in found and "boom" in found
    assert "request failed: GET" in found and "/unreachable/x" in found
    assert "404 for GET" in found and "/no-such-page/" in found
    with pytest.raises(AssertionError, match="self-check, step 'login'"):
        journey.step("login", accessible=False)
    with pytest.raises(AssertionError, match="boom"):
        journey.close()


# --- (a) the visitor ------------------------------------------------------------------------------------


@pytest.fixture
def visitor_board():
    """Two papers, three models with results; the second paper was first committed after one model's cutoff
    (so the contamination rules keep different papers); every completion carries code, so the snippet page
    shows a diff against the reference, its changed lines holding the tokens whose colours are the palest
    there (operator words, constants, an exception, an f-string's braces)."""
    import datetime as dt

    from contributions.models import Snippet
    from evaluation.models import Completion
    from leaderboard.services import leaderboard_refresh_run
    from tests.factories import LanguageModelFactory, make_benchmark, make_run

    rel, snippets = make_benchmark(
        {"alpha": (dt.date(2023, 1, 10), [3, 2, 5]), "beta": (dt.date(2025, 3, 1), [4, 1])},
        release="rcb-test",
    )
    Snippet.objects.update(code="def f(x):\n    y = x * 2 if x is not None else 0\n    return y\n")
    models = [
        ("open-one", "Model Open One", "Meta", True, {"alpha": "P P P", "beta": "P F"}),
        ("closed-two", "Model Closed Two", "OpenAI", False, {"alpha": "P F P", "beta": "F F"}),
        ("closed-three", "Model Closed Three", "Google", False, {"alpha": "F F P", "beta": "P P"}),
    ]
    for key, name, developer, open_weights, verdicts in models:
        model = LanguageModelFactory(
            key=key, name=name, developer=developer, open_weights=open_weights,
            knowledge_cutoff=dt.date(2024, 6, 1),
        )  # fmt: skip
        run = make_run(snippets, verdicts, release=rel, model=model)
        Completion.objects.filter(run=run).update(
            code='def f(x):\n    y = x + x if x not in (None,) else ValueError(f"{x}")\n    return y\n'
        )
        leaderboard_refresh_run(run=run)
    # A later release that one model alone was run on: it scores other tasks, so compare never sets it beside
    # a run on rcb-test (the board keeps showing rcb-test, the default).
    later, later_snippets = make_benchmark({"gamma": (dt.date(2025, 4, 1), [2, 2])}, release="rcb-later")
    rel.is_default = True
    rel.save(update_fields=["is_default"])
    model = LanguageModelFactory(key="later-four", name="Model Later Four", developer="Mistral")
    leaderboard_refresh_run(run=make_run(later_snippets, {"gamma": "P F"}, release=later, model=model))
    return rel


def board_models(page: Any) -> list[str]:
    return page.locator("#board-table tbody tr td.model-cell a").all_inner_texts()


def test_a_visitor_browses_sorts_filters_compares_opens_a_snippet_diff_and_downloads_the_csv(
    live_server, visitor_board, browser
):
    journey = Journey(browser, "visitor", live_server.url)
    page = journey.page
    journey.goto("/")
    assert board_models(page) == ["Model Open One", "Model Closed Three", "Model Closed Two"]
    journey.step("board", targets=["#f-contamination", "#board-table a.sort", "#board-table td.model-cell a"])
    board_readable_at_phone_width(page, live_server.url)

    page.get_by_role("link", name="Model", exact=True).click()
    page.wait_for_url("**sort=name*")
    page.wait_for_function("document.querySelector('#board-table tbody td.model-cell a') !== null")
    assert board_models(page) == sorted(board_models(page))
    journey.step("sorted by name")

    page.select_option("#f-contamination", "global")
    page.wait_for_url("**contamination=global*")
    page.wait_for_selector(".filter-summary")
    assert "Original global rule" in page.locator(".filter-summary").inner_text()
    journey.step("contamination rule")

    journey.goto("/compare/")
    page.fill("#compare-new", "open-one")
    page.click("main form button[type=submit]")
    page.wait_for_url("**models=open-one*")
    page.fill("#compare-new", "closed-two")
    page.click("main form button[type=submit]")
    page.wait_for_url("**models=closed-two*")
    assert page.locator("#compare-runs tbody tr").count() == 2
    assert "Compared on release rcb-test" in page.locator("#compare-setting").inner_text()
    # The paired difference over the snippets both were judged on, with its interval and a plain verdict.
    pair = page.locator("#compare-pairs tbody tr").first.inner_text()
    assert "Model Open One − Model Closed Two" in pair, pair
    assert re.search(r"-?\d+\.\d\d\s+-?\d+\.\d\d to -?\d+\.\d\d\s+5\s", pair), pair
    assert "the interval excludes zero" in pair or "Not distinguishable from zero" in pair, pair
    journey.step("compare two models", targets=["#compare-new", "#compare-runs a"])

    # Models with no run on a common release: no scores side by side, the reason and each one's settings.
    journey.goto("/compare/?models=open-one&models=later-four")
    assert page.locator("#compare-runs").count() == 0
    mismatch = page.locator(".setting-mismatch").inner_text()
    assert (
        "These models have no setting in common" in mismatch
        and "another release scores other tasks" in mismatch
    )
    settings = page.locator("#compare-settings").inner_text()
    assert (
        "Model Open One: release rcb-test" in settings and "Model Later Four: release rcb-later" in settings
    )
    journey.step("compare across releases")
    journey.goto("/compare/?models=open-one&models=closed-two")

    page.locator("#compare-runs").get_by_role("link", name="Model Open One").click()
    page.wait_for_url("**/models/open-one/**")
    assert page.locator("h1").inner_text() == "Model Open One"
    journey.step("model page")

    journey.goto("/papers/alpha/")
    assert page.locator("#paper-models tbody tr").count() == 3
    journey.step("paper page", targets=["#f-developer"])

    journey.goto("/papers/alpha/snippets/s0/")
    assert "Diff against the reference: 1 line added, 1 removed" in page.locator("main").inner_text()
    journey.step("snippet diff")

    journey.goto("/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Chart data (CSV)").click()
    csv = Path(download.value.path()).read_text()
    assert "Model Open One" in csv and "Model Closed Two" in csv
    journey.step("csv downloaded", accessible=False)
    journey.close()


# --- (b) and (c) the author and the maintainer ----------------------------------------------------------


def example_zip(folder: Path) -> dict:
    """The example task as a zip, in the shape Playwright's ``set_input_files`` takes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.name != "task.yaml":
                archive.writestr(f"{folder.name}/{path.relative_to(folder).as_posix()}", path.read_bytes())
    return {"name": f"{folder.name}.zip", "mimeType": "application/zip", "buffer": buffer.getvalue()}


def confirmation_link(address: str) -> str:
    (message,) = [m for m in mail.outbox if address in m.to]
    match = re.search(r"https?://\S+/accounts/confirm-email/\S+/", message.body)
    assert match, message.body
    return match.group(0)


def submit_button(page: Any) -> None:
    page.locator("main form button[type=submit]").last.click()


def test_an_author_contributes_a_task_that_a_maintainer_publishes_and_the_portal_evaluates(
    live_server, browser, start_worker, fake_server, settings, tmp_path, monkeypatch
):
    from contributions.models import Proposal
    from evaluation.models import EvaluationRun
    from tests.factories import PASSWORD, MaintainerFactory, fake_llm_model

    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark"
    settings.RCB_LEADERBOARD_DEBOUNCE_S = 0
    allowed = f"api.openai.com,127.0.0.1:{fake_server.port}"
    settings.RCB_LLM_ALLOWED_HOSTS = allowed.split(",")
    worker_env = {
        "RCB_VERDICT_CACHE": "0",
        "RCB_LLM_KEY_FAKE": "sk-test",
        "RCB_LLM_ALLOWED_HOSTS": allowed,
        "RCB_LEADERBOARD_DEBOUNCE_S": "0",
        "RCB_BENCHMARK_REPO": str(settings.RCB_BENCHMARK_REPO),
    }
    monkeypatch.setenv("RCB_LLM_KEY_FAKE", "sk-test")
    start_worker(concurrency=2, extra_env=worker_env)
    model = fake_llm_model(fake_server.base_url, key="portal-model")
    maintainer = MaintainerFactory()

    # ---- (b) the author signs up and confirms the address from the email
    author = Journey(browser, "author", live_server.url)
    page = author.page
    author.goto("/accounts/signup/")
    author.step("sign-up form", targets=["#id_email", "#id_password1", "#id_password2"])
    page.fill("#id_email", "ada@example.org")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    submit_button(page)
    page.wait_for_url("**/accounts/confirm-email/")
    author.step("confirmation sent")
    page.goto(confirmation_link("ada@example.org"))
    author.step("confirm address")
    submit_button(page)
    page.wait_for_load_state()
    assert "ada@example.org" not in page.url

    # ---- the example task, as a zip, through every step of the form
    author.goto("/contribute/new/")
    author.step("paper step", targets=["#id_task_key", "#id_title"])
    page.fill("#id_task_key", "rmsnorm-journey")
    page.fill("#id_title", "Root Mean Square Layer Normalization")
    page.fill("#id_arxiv", "https://arxiv.org/abs/1910.07467v1")
    page.select_option("#id_license", "MIT")
    submit_button(page)
    page.wait_for_url("**/step/2/")
    author.step("code step", targets=["#id_archive"])
    page.set_input_files("#id_archive", example_zip(EXAMPLE))
    submit_button(page)
    page.wait_for_url("**/step/3/")
    author.step("files step")
    page.check("input[name=annotated_files][value='rmsnorm.py']")
    page.check("input[name=oracle_files][value='rmsnorm_ref.py']")
    page.select_option("#id_test_entry", "paper2code_test.py")
    page.select_option("#id_paper_file", "paper2code_paper.md")
    submit_button(page)
    page.wait_for_url("**/step/4/")
    author.step("preview")
    submit_button(page)
    page.wait_for_url("**/step/5/")
    author.step("submit step")
    submit_button(page)
    page.wait_for_url(re.compile(r".*/contribute/\d+/$"))
    proposal = Proposal.objects.get(task_key="rmsnorm-journey")
    # The page polls while validation runs; the worker's verdict replaces the status in place.
    page.wait_for_selector(".vstatus-passed", timeout=300_000)
    # A keyboard reaches the comments and the review form past the code through the page's contents links.
    author.step("validation finished", targets=["a[href='#thread']"])

    # ---- the maintainer asks for a change; the author answers it with a new revision
    reviewer = Journey(browser, "maintainer", live_server.url)
    rpage = reviewer.page
    reviewer.goto(f"/accounts/login/?next=/contribute/{proposal.pk}/")
    rpage.fill("#id_login", maintainer.email)
    rpage.fill("#id_password", PASSWORD)
    submit_button(rpage)
    rpage.wait_for_url(f"**/contribute/{proposal.pk}/")
    reviewer.step("proposal under review", targets=["a[href='#reviews']"])
    rpage.check("input[name=decision][value=request_changes]")
    rpage.fill("#review-form textarea", "Please name the venue (NeurIPS2019).")
    rpage.locator("#review-form button[type=submit]").click()
    rpage.wait_for_load_state()
    reviewer.step("changes requested")

    author.goto(f"/contribute/{proposal.pk}/")
    assert "Please name the venue" in page.locator("main").inner_text()
    author.step("review comment seen")
    page.get_by_role("link", name="Upload a new revision").click()
    page.wait_for_url("**/step/2/")
    page.set_input_files("#id_archive", example_zip(EXAMPLE))
    submit_button(page)
    page.wait_for_url("**/step/3/")
    submit_button(page)
    page.wait_for_url("**/step/4/")
    submit_button(page)
    page.wait_for_url("**/step/5/")
    submit_button(page)
    page.wait_for_url(re.compile(r".*/contribute/\d+/$"))
    page.wait_for_selector(".vstatus-passed", timeout=300_000)
    assert proposal.revisions.count() == 2
    author.step("revision 2 validated")

    # ---- (c) the maintainer approves; the task is on the papers page; the portal's model runs on it
    reviewer.goto(f"/contribute/{proposal.pk}/")
    for box in rpage.locator("#review-form .rubric input[type=checkbox]").all():
        box.check()
    rpage.check("input[name=decision][value=approve]")
    rpage.locator("#review-form button[type=submit]").click()
    rpage.wait_for_load_state()
    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.PUBLISHED, proposal.events.last().reason
    reviewer.step("approved")
    reviewer.goto("/papers/")
    assert "Root Mean Square Layer Normalization" in rpage.locator("main").inner_text()
    reviewer.step("papers page")

    from tests.conftest import wait_for

    wait_for(
        lambda: (
            EvaluationRun.objects.filter(model=model).exists()
            and all(r.is_final for r in EvaluationRun.objects.filter(model=model))
        ),
        timeout=300,
        what="the portal-run model's evaluation of the new task",
    )
    run = EvaluationRun.objects.get(model=model)
    assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
    reviewer.goto(f"/runs/{run.pk}/")
    reviewer.step("run finished")
    # The status page says in words how long ago the live worker was heard from, the exact time kept.
    reviewer.goto("/status/")
    seen = rpage.locator("table.workers time").first
    assert re.fullmatch(r"now|(a|\d+)\s(second|minute)s?\sago", seen.inner_text()), seen.inner_text()
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", seen.get_attribute("datetime"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", seen.get_attribute("title"))
    reviewer.step("status page")
    paper_key = proposal.published_version.task.paper.key

    def scored_on_paper() -> bool:
        rpage.goto(f"{live_server.url}/papers/{paper_key}/?release=*")
        return rpage.locator("#paper-models tbody tr", has_text=model.name).count() == 1

    wait_for(scored_on_paper, timeout=120, interval=2, what="the model's score on the new paper")
    row = rpage.locator("#paper-models tbody tr", has_text=model.name).inner_text()
    score = re.search(r"\d+\.\d\d", row)
    assert score and 0 < float(score.group(0)) < 100, row  # the fake LLM gets every 4th snippet wrong
    reviewer.step("score on the paper page")
    # The run covers the new task alone, so its board score is its score on the new paper.
    reviewer.goto("/?release=*")
    board_row = rpage.locator(f"tr[data-model='{model.key}']")
    assert board_row.count() == 1 and score.group(0) in board_row.inner_text(), board_row.all_inner_texts()
    reviewer.step("score on the board")
    author.close()
    reviewer.close()


# --- issue 22: the author's Back in the form, and a flagged proposal's next step, at two widths -----------


def sign_in(journey: Journey, user: Any, path: str) -> None:
    from tests.factories import PASSWORD

    journey.goto(f"/accounts/login/?next={path}")
    journey.page.fill("#id_login", user.email)
    journey.page.fill("#id_password", PASSWORD)
    submit_button(journey.page)
    journey.page.wait_for_url(f"**{path}")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_form_keeps_what_was_typed_and_a_flagged_proposal_shows_its_next_step(
    live_server, browser, width
):
    from contributions.models import Proposal
    from tests.factories import MaintainerFactory, UserFactory
    from tests.factories.builders import NOT_CHECKED, proposal_validated, validation_report

    user = UserFactory()
    author = Journey(browser, f"keeps-{width}", live_server.url, width=width)
    page = author.page
    sign_in(author, user, "/contribute/")

    # ---- Back after "Save and continue" shows the answers, and saving again continues the same draft
    author.goto("/contribute/new/")
    page.wait_for_url("**/contribute/new/?form=*")
    page.fill("#id_task_key", "rmsnorm-back")
    page.fill("#id_title", "Root Mean Square Layer Normalization")
    page.select_option("#id_license", "MIT")
    submit_button(page)
    page.wait_for_url("**/step/2/")
    fits_the_width(page)
    page.go_back()
    page.wait_for_function("() => document.querySelector('#id_task_key')?.value === 'rmsnorm-back'")
    assert page.input_value("#id_title") == "Root Mean Square Layer Normalization"
    fits_the_width(page)
    author.step("back to the paper step", targets=["#id_task_key"])
    page.fill("#id_venue", "NeurIPS2019")
    submit_button(page)
    page.wait_for_url("**/step/2/")
    draft = Proposal.objects.get(author=user)
    assert draft.meta.get("venue") == "NeurIPS2019" and Proposal.objects.filter(author=user).count() == 1
    page.reload()
    author.goto(f"/contribute/{draft.pk}/step/1/")
    assert page.input_value("#id_venue") == "NeurIPS2019"
    author.step("reload keeps the answers")

    # ---- a proposal with a snippet its test does not check: one status, the next step, a new revision
    flagged = proposal_validated(validation_report(NOT_CHECKED), author=user)
    author.goto(f"/contribute/{flagged.pk}/")
    assert "Needs a fix: 1 snippet not checked by its test" in page.locator("h1").inner_text()
    step = page.locator("#next-step").inner_text()
    assert "assert on the value the snippet computes" in step and "compute rms" in step
    fits_the_width(page)
    author.step("flagged proposal", targets=["#next-step a.button"])
    page.locator("#next-step").get_by_role("link", name="Upload a new revision").click()
    page.wait_for_url("**/step/2/")
    fits_the_width(page)
    author.step("new revision form", targets=["#id_archive"])

    # ---- the maintainer's queue: the same words, the validation outcome, the waiting time
    reviewer = Journey(browser, f"queue-{width}", live_server.url, width=width)
    sign_in(reviewer, MaintainerFactory(), "/review/")
    row = reviewer.page.locator(f"tr[data-proposal='{flagged.pk}']").inner_text()
    assert "Needs a fix" in row and "not checked by its test" in row
    fits_the_width(reviewer.page)
    reviewer.step("review queue", targets=["#id_state_0", "#id_q"])
    # The maintainer's page of the proposal: the same status, in the same words.
    reviewer.page.locator(f"tr[data-proposal='{flagged.pk}'] a").first.click()
    reviewer.page.wait_for_url(f"**/contribute/{flagged.pk}/")
    assert "Needs a fix: 1 snippet not checked by its test" in reviewer.page.locator("h1").inner_text()
    reviewer.step("proposal, maintainer")
    author.close()
    reviewer.close()


# --- issue 22: picking models to compare on a compact board, at two widths --------------------------------

#: long display names like the published board's, which once pushed the score off a phone's screen
LONG_NAMES = [
    "Claude 3.7 Sonnet (2025-02-19) with extended thinking",
    "Gemini 2.5 Pro Preview (05-06) experimental",
    "OpenRouter o4-mini (high reasoning effort)",
    "DeepSeek R1 Distill Llama 70B instruct",
    "GPT-4.1 mini (2025-04-14) via the OpenAI API",
    "Llama 3.3 70B Instruct Turbo (Together)",
]


@pytest.fixture
def long_board():
    """Six models with long names on one release, close enough in score that neighbours tie, their
    intervals and ranks computed by the per-release step."""
    from leaderboard.services import leaderboard_refresh_release, leaderboard_refresh_run
    from tests.factories import LanguageModelFactory, make_benchmark, make_run

    rel, snippets = make_benchmark({"alpha": (None, [3, 2, 5, 1]), "beta": (None, [4, 1, 2])})
    patterns = ["P P P P", "P P F P", "P F P P", "F P P P", "P F F P", "F F P F"]
    for i, name in enumerate(LONG_NAMES):
        model = LanguageModelFactory(key=f"LONG_MODEL_{i}", name=name, developer=f"Developer {i % 3}")
        run = make_run(
            snippets, {"alpha": patterns[i], "beta": patterns[-1 - i][:5]}, release=rel, model=model
        )
        leaderboard_refresh_run(run=run)
    leaderboard_refresh_release(release_id=rel.pk)
    return rel


def name_and_score_on_screen(page: Any) -> None:
    """Every board row's model name and Scaled Pass@1 lie inside the viewport."""
    width = page.evaluate("window.innerWidth")
    for cell in ("td.model-cell", "td.c-scaled"):
        for box in (e.bounding_box() for e in page.locator(f"#board-table tbody {cell}").all()):
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (cell, box)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_visitor_picks_models_to_compare_on_a_compact_board(live_server, browser, long_board, width):
    journey = Journey(browser, f"pick-{width}", live_server.url, width=width)
    page = journey.page
    journey.goto("/")
    fits_the_width(page)
    name_and_score_on_screen(page)
    # Every item of the navigation is on screen at either width, nothing in it scrolls: on a phone the main
    # links wrap under the brand's line, in two lines at most (issue 34).
    items = page.evaluate(
        "[...document.querySelectorAll('nav.nav .brand, nav.nav li')].map(e => { const r = e.getBoundingClientRect();"
        " return {text: e.innerText, left: r.left, right: r.right, middle: Math.round((r.top + r.bottom) / 2)}; })"
    )
    assert all(0 <= i["left"] and i["right"] <= width for i in items), items
    assert page.evaluate(
        "[...document.querySelectorAll('nav.nav ul')].every(u => u.scrollWidth <= u.clientWidth)"
    )
    lines = {round(i["middle"] / 16) for i in items}
    assert len(lines) <= (2 if width == DESKTOP else 3), f"the navigation's items centre at {items}"
    # Compact rows: a tie is a marker, not a list of names; the header stays in view.
    assert page.locator("#board-table details.tie").count()
    assert page.locator("#board-table details.tie[open]").count() == 0
    assert (
        page.evaluate("getComputedStyle(document.querySelector('#board-table thead th')).position")
        == "sticky"
    )
    if width == 1280:  # every column fits: the table does not scroll in its box
        assert page.evaluate(
            "(() => { const w = document.querySelector('#board-table').parentElement;"
            " return w.scrollWidth <= w.clientWidth; })()"
        )
    journey.step(
        "compact board", targets=["#board-table input.pick", "#board-compare button", "#board-downloads a"]
    )

    page.locator("#board-table details.tie summary").first.click()
    assert "≈" in page.locator("#board-table details.tie[open] .tie-names").inner_text()
    page.locator(".column-chooser summary").click()
    page.uncheck("#col-date")
    page.click("#board-columns button[type=submit]")
    page.wait_for_url("**cols=*")
    assert page.locator("#board-table thead th.c-date").count() == 0
    fits_the_width(page)
    journey.step("a column hidden")

    page.get_by_role("checkbox", name=f"Compare {LONG_NAMES[0]}").check()
    page.get_by_role("checkbox", name=f"Compare {LONG_NAMES[3]}").check()
    page.click("#board-compare button[type=submit]")
    page.wait_for_url("**/compare/?models=*")
    assert page.locator("#compare-runs tbody tr").count() == 2
    assert "LONG_MODEL_0" in page.url and "LONG_MODEL_3" in page.url
    fits_the_width(page)
    journey.step("compare the picked models", targets=["#compare-new"])

    # The comparison's URL is shareable, and takes the names the site shows.
    shared = page.url
    journey.goto("/compare/")
    assert page.locator("#compare-errors").count() == 0
    assert "Pick the models to compare" in page.locator("main").inner_text()
    fits_the_width(page)
    journey.step("empty comparison")
    page.fill("#compare-new", LONG_NAMES[1].upper())
    page.fill("#compare-new-2", LONG_NAMES[2])
    page.click("main form.compare-pick button[type=submit]")
    page.wait_for_selector("#compare-runs")
    assert page.locator("#compare-runs tbody tr").count() == 2
    fits_the_width(page)
    journey.step("compare by name")
    journey.goto(shared.removeprefix(live_server.url))
    assert page.locator("#compare-runs tbody tr").count() == 2
    journey.close()


# --- a release's page and its download (issue 22 item 6), the API's front page and the 404 (item 5) ------


@pytest.mark.parametrize("width", [1280, 390])
def test_a_visitor_opens_a_release_page_downloads_its_task_folders_and_finds_the_api(
    live_server, browser, width
):
    import tarfile

    from contributions import services
    from contributions.models import Release

    services.release_create_from_pset(path=REPO / "examples" / "pset", name="demo")
    Release.objects.filter(name="demo").update(
        git_tag="release/demo", git_commit="0123456789abcdef" * 2 + "01234567"
    )
    visitor = Journey(browser, f"release-{width}", live_server.url, width=width)
    page = visitor.page

    visitor.goto("/releases/")
    page.locator("#releases-table").get_by_role("link", name="demo").click()
    page.wait_for_url("**/releases/demo/")
    assert "Release demo" in page.locator("h1").inner_text()
    assert page.locator("#release-tasks tbody tr").count() == 10
    assert "release/demo" in page.locator("#release-facts").inner_text()
    assert "@misc{researchcodebench-demo," in page.locator("#release-bibtex").inner_text()
    fits_the_width(page)
    visitor.step("release page", targets=["#release-links a[download]", "#release-bibtex"])

    with page.expect_download() as download:
        page.locator("#release-links a[download]").click()
    assert download.value.suggested_filename == "demo.tar.gz"
    with tarfile.open(download.value.path(), mode="r:gz") as tar:
        names = tar.getnames()
    assert "demo/papers.yaml" in names and "demo/rmsnorm/paper2code_test.py" in names
    visitor.step("release downloaded", accessible=False)

    page.locator("#release-links").get_by_role("link", name="Leaderboard of this release").click()
    page.wait_for_url("**/?release=demo")
    fits_the_width(page)
    visitor.step("the release's board")

    page.locator("nav[aria-label=Main]").get_by_role("link", name="API", exact=True).click()
    page.wait_for_url("**/api/")
    fits_the_width(page)
    visitor.step("api front page", targets=["#api-links a"])

    visitor.expected_errors.add(("GET", "/releases/no-such-release/"))
    visitor.goto("/releases/no-such-release/")
    assert page.locator("h1").inner_text() == "Page not found"
    # Chromium logs the expected 404 of the page itself as a console error: that one is this step's point.
    visitor.problems = [p for p in visitor.problems if "status of 404" not in p]
    fits_the_width(page)
    visitor.step("not found")

    # Signed in without the maintainers' role: no "Review" link is offered; the review queue, reached by its
    # address, and a form-only address say what to do.
    from tests.factories import UserFactory

    sign_in(visitor, UserFactory(), "/releases/")
    visitor.expected_errors |= {("GET", "/review/"), ("GET", "/releases/demo/default/")}
    assert page.locator("nav[aria-label=Main]").get_by_role("link", name="Review", exact=True).count() == 0
    visitor.goto("/review/")
    assert page.locator("h1").inner_text() == "You cannot open this page"
    fits_the_width(page)
    visitor.problems = [p for p in visitor.problems if "status of 403" not in p]
    visitor.step("review queue forbidden", targets=["main a[href='/contribute/']"])
    visitor.goto("/releases/demo/default/")
    assert page.locator("h1").inner_text() == "This address receives a form"
    fits_the_width(page)
    visitor.problems = [p for p in visitor.problems if "status of 405" not in p]
    visitor.step("form address opened", targets=["main a[href='/releases/demo/']"])
    visitor.close()


# --- snippet statistics and raw answers (issue 22 item 8) ------------------------------------------------


def stat_names(page: Any, table: str) -> list[str]:
    return page.locator(f"#{table} tbody th[scope=row] a").all_inner_texts()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_visitor_sorts_a_papers_snippet_statistics_and_reads_a_raw_answer(
    live_server, browser, visitor_board, width
):
    from evaluation.models import Completion
    from tests.factories import MaintainerFactory

    Completion.objects.filter(
        run__model__key="open-one", snippet__task_version__task__paper__key="alpha"
    ).update(raw_response="Here you go:\n```python\ny = x + x\n```\n" + "# a long line the box scrolls " * 20)
    journey = Journey(browser, f"snippet-stats-{width}", live_server.url, width=width)
    page = journey.page
    journey.goto("/papers/alpha/")
    assert stat_names(page, "snippet-stats") == ["s0", "s1", "s2"]
    fits_the_width(page)
    journey.step("paper snippet statistics", targets=["#snippet-stats a.sort"])

    page.locator("#snippet-stats thead").get_by_role("link", name="Solve rate").click()
    page.wait_for_url("**snippet_sort=solve_rate*")
    page.wait_for_function("document.querySelector('#snippet-stats th[aria-sort=ascending]') !== null")
    assert stat_names(page, "snippet-stats") == ["s1", "s0", "s2"]  # 33.3%, 66.7%, 100%
    page.locator("#snippet-stats thead").get_by_role("link", name="Solve rate").click()
    page.wait_for_url("**snippet_sort=-solve_rate*")
    page.wait_for_function("document.querySelector('#snippet-stats th[aria-sort=descending]') !== null")
    assert stat_names(page, "snippet-stats") == ["s2", "s0", "s1"]
    fits_the_width(page)
    journey.step("sorted by solve rate")
    # The sort is in the URL: a reload (or a shared link) shows the same order.
    page.reload()
    assert stat_names(page, "snippet-stats") == ["s2", "s0", "s1"]

    journey.goto("/papers/alpha/snippets/s0/")
    page.locator(".raw-choices").get_by_role("link", name="Model Open One").click()
    page.wait_for_url("**run=*")
    raw, code = page.locator(".raw-response").bounding_box(), page.locator(".extracted-code").bounding_box()
    if width >= 1280:
        assert abs(raw["y"] - code["y"]) < 40 and raw["x"] < code["x"]  # side by side
    else:
        assert code["y"] >= raw["y"] + raw["height"]  # stacked
    fits_the_width(page)
    journey.step("raw answer", targets=[".raw-response", ".extracted-code"])

    sign_in(journey, MaintainerFactory(), "/curation/snippets/")
    assert stat_names(page, "curation-table") == ["s0", "s1", "s2", "s0", "s1"]
    page.select_option("#cur-status", "always")
    page.wait_for_url("**status=always*")
    page.wait_for_function("document.querySelectorAll('#curation-table tbody tr').length === 1")
    assert stat_names(page, "curation-table") == ["s2"]
    fits_the_width(page)
    journey.step("curation view", targets=["#cur-status", "#curation-table a.sort"])
    journey.close()


# --- contamination, clearly: the paper-date window (issue 22 item 7), at two widths ----------------------


@pytest.mark.parametrize("width", [1280, 390])
def test_a_visitor_narrows_the_board_to_a_paper_date_window_with_or_without_javascript(
    live_server, browser, visitor_board, width
):
    journey = Journey(browser, f"window-{width}", live_server.url, width=width)
    page = journey.page
    journey.goto("/")
    # The script reveals a month slider per bound; the date inputs stay the form's fields.
    sliders = page.locator("#date-window [data-window-sliders]")
    sliders.wait_for(state="visible")
    assert page.locator("#f-window-from-out").inner_text() == "2023-01"
    assert page.locator("#f-window-to-out").inner_text() == "2025-03"
    fits_the_width(page)
    journey.step("the window's controls", targets=["#f-paper_from", "#f-window-from", "#f-window-to"])

    # 2023-01 + 24 months: the window starts at 2025-01-01 and keeps beta only.
    page.locator("#f-window-from").fill("24")
    page.wait_for_url("**paper_from=2025-01-01*")
    page.locator("#window-summary").wait_for()
    assert "1 of the release's 2 papers" in page.locator("#window-summary").inner_text()
    assert page.input_value("#f-paper_from") == "2025-01-01"
    assert len(board_models(page)) == 3
    # beta only: closed-three passed both of its snippets.
    assert board_models(page)[0] == "Model Closed Three"
    fits_the_width(page)
    journey.step("a window from 2025", targets=["#f-window-from"])

    # The model page plots its score either side of its cutoff.
    journey.goto("/models/open-one/")
    assert page.locator("#model-cutoff-dates").count() == 1
    fits_the_width(page)
    journey.step("the model's score by paper date")

    # The contamination page reads one release and states the unknown-date rule.
    journey.goto("/contamination/")
    assert "Release rcb-test: 2 papers." in page.locator("#contamination-release").inner_text()
    assert (
        "every one of these papers has a known first-commit date"
        in page.locator("#undated-rule").inner_text()
    )
    fits_the_width(page)
    journey.step("the contamination page")
    journey.close()

    # Without JavaScript: no slider, and the date inputs submit as a plain GET form.
    context = browser.new_context(viewport={"width": width, "height": 900}, java_script_enabled=False)
    plain = context.new_page()
    plain.goto(f"{live_server.url}/")
    assert not plain.locator("#date-window [data-window-sliders]").is_visible()
    plain.fill("#f-paper_to", "2024-12-31")
    plain.click("#lb-filters button[type=submit]")
    plain.wait_for_url("**paper_to=2024-12-31*")
    assert "1 of the release's 2 papers" in plain.locator("#window-summary").inner_text()
    assert plain.evaluate("document.documentElement.scrollWidth") <= width
    plain.screenshot(path=str(SHOTS / f"window-{width}-no-javascript.png"), full_page=True)
    context.close()
