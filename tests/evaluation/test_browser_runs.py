"""Browser journey in the system Chromium: a maintainer uploads predictions, lands on the run page and
watches its progress update live until the run is final (then the page stops polling).

Real parts only: the live server, a real Celery worker process, the sandboxed runner on an example task.
Screenshots go to /tmp/rcb-browser-*.png for a person to look at.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.models import EvaluationRun
from tests.conftest import wait_for
from tests.evaluation.engine_helpers import example_tasks, import_release
from tests.factories import StaffUserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path("/tmp")


@pytest.fixture
def browser_page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(20_000)
    return page


def predictions_file(tmp_path: Path) -> tuple[Path, int]:
    """Reference code for most focal-loss snippets, one wrong answer and one prose reply; some left out."""
    task = example_tasks(("focal-loss",))[0]
    lines = []
    for i, snippet in enumerate(task.snippets[:6]):
        record = {"task": task.id, "snippet": snippet.name, "completion_idx": 0}
        if i == 1:
            record["code"] = 'raise RuntimeError("wrong on purpose")'
        elif i == 2:
            record["response"] = "I would rather not write this block."
        else:
            record["code"] = snippet.code
        lines.append(json.dumps(record))
    path = tmp_path / "predictions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(task.snippets)


def test_staff_uploads_predictions_and_watches_the_run_finish(
    transactional_db, live_server, browser_page, start_worker, tmp_path
):
    page = browser_page
    StaffUserFactory(username="maintainer", password="a-long-test-password")
    import_release(tmp_path, name="focal", task_ids=("focal-loss",))
    predictions, n_snippets = predictions_file(tmp_path)

    page.goto(f"{live_server.url}/accounts/login/?next=/runs/upload/")
    page.fill("#id_login", "maintainer@example.org")
    page.fill("#id_password", "a-long-test-password")
    page.click("form.account-form button[type=submit]")
    page.wait_for_url("**/runs/upload/")

    page.select_option("#id_model", "")
    page.fill("#id_new_model_key", "browser-model")
    page.fill("#id_new_model_name", "Browser Model")
    page.select_option("#id_release", "focal")
    page.set_input_files("#id_file", str(predictions))
    page.click("main button[type=submit]")
    page.wait_for_url("**/runs/*/")

    run = EvaluationRun.objects.get()
    assert page.url == f"{live_server.url}/runs/{run.pk}/"
    progress = page.locator("#run-progress")
    assert progress.get_attribute("hx-trigger") == "every 2s"
    assert "0 of 6" in progress.inner_text()
    assert f"6 of {n_snippets} snippets" in progress.inner_text()
    page.screenshot(path=str(SHOTS / "rcb-browser-run-waiting.png"), full_page=True)

    start_worker(queues="eval-cpu,site", extra_env={"RCB_VERDICT_CACHE": "0"})
    # The page itself must pick the result up (htmx polling), without a reload.
    page.wait_for_function(
        "() => !document.querySelector('#run-progress').hasAttribute('hx-trigger')", timeout=120_000
    )
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.FINISHED
    text = page.locator("#run-progress").inner_text()
    assert "6 of 6 items finished (100.0%)" in text
    assert "4 of 6 tests passed" in text
    assert page.locator('#outcome-counts tr[data-outcome="passed"] td').inner_text() == "4"
    assert page.locator('#outcome-counts tr[data-outcome="failed"] td').inner_text() == "1"
    assert page.locator('#outcome-counts tr[data-outcome="no_code"] td').inner_text() == "1"
    assert "RuntimeError" in page.locator("table.errors").inner_text()
    page.screenshot(path=str(SHOTS / "rcb-browser-run-finished.png"), full_page=True)

    # The run list finds it through the filters, and the htmx swap keeps a real URL.
    page.goto(f"{live_server.url}/runs/")
    page.select_option("#id_status", "finished")
    page.wait_for_url("**/runs/?*status=finished*")
    wait_for(lambda: page.locator("#run-table a[href^='/runs/']").count() == 1, what="filtered run list")
    page.screenshot(path=str(SHOTS / "rcb-browser-run-list.png"), full_page=True)
