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
tests/test_accessibility.py (axe-core, keyboard). Each step leaves a screenshot under
``$RCB_VAR_DIR/journeys/`` (var/test/journeys/ in ``make test``).
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core import mail

from tests.conftest import REPO
from tests.evaluation.test_demo_fake_llm import fake_server
from tests.test_accessibility import audit, board_readable_at_phone_width

__all__ = ["fake_server"]  # the demo's fake LLM (manage.py serve_fake_llm), used as a fixture below

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(os.environ.get("RCB_VAR_DIR", REPO / "var" / "test")) / "journeys"
EXAMPLE = REPO / "examples" / "pset" / "rmsnorm"


class Journey:
    """A page that records what goes wrong in the browser, and names each step with a screenshot."""

    def __init__(self, browser: Any, name: str, base_url: str, *, width: int = 1200) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
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
        """A screenshot named after the step; the accessibility audit of the page as it is now; and no
        browser problem so far (failing at the step where the first one appeared)."""
        self.steps += 1
        # htmx settled: no request in flight and its indicators faded out (mid-fade text fails contrast).
        self.page.wait_for_function(
            """() => !document.querySelector('.htmx-request') && [...document.querySelectorAll('.htmx-indicator')]
                     .every(e => getComputedStyle(e).opacity === '0')"""
        )
        slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
        self.page.screenshot(path=str(SHOTS / f"{self.name}-{self.steps:02d}-{slug}.png"), full_page=True)
        assert not self._problems(), f"{self.name}, step {label!r}:\n" + "\n".join(self._problems())
        if accessible:
            audit(self.page, targets=list(targets))

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
    shows a diff against the reference."""
    import datetime as dt

    from contributions.models import Snippet
    from evaluation.models import Completion
    from leaderboard.services import leaderboard_refresh_run
    from tests.factories import LanguageModelFactory, make_benchmark, make_run

    rel, snippets = make_benchmark(
        {"alpha": (dt.date(2023, 1, 10), [3, 2, 5]), "beta": (dt.date(2025, 3, 1), [4, 1])},
        release="rcb-test",
    )
    Snippet.objects.update(code="def f(x):\n    y = x * 2\n    return y\n")
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
        Completion.objects.filter(run=run).update(code="def f(x):\n    y = x + x\n    return y\n")
        leaderboard_refresh_run(run=run)
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
    journey.step("compare two models", targets=["#compare-new", "#compare-runs a"])

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
