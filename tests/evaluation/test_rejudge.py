"""Harness tampering on the run page, and a maintainer's cold re-judge of an uploaded run's passes
(evaluation/services/rejudge.py, docs/integrity.md#re-judging)."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from contributions.task_folders import task_version_task
from evaluation.models import Completion, EvaluationRun, TestResult
from evaluation.selectors.integrity import TAMPERING_REDACTED, tampering_findings
from evaluation.services import Prediction, run_create, run_rerun
from evaluation.services.rejudge import RejudgeError, run_rejudge_passes, test_result_rejudge_record
from leaderboard.models import RunPaperScore
from leaderboard.services import leaderboard_refresh_run
from researchcodebench.environments import resolve_environment
from researchcodebench.runner import Verdict, VerdictCache, task_facts
from tests.conftest import wait_for
from tests.evaluation.engine_helpers import example_tasks, import_release
from tests.factories import (
    LanguageModelFactory,
    StaffUserFactory,
    UserFactory,
    make_release,
    make_staged_run,
)

Outcome = TestResult.Outcome
PASSED = Verdict(outcome="passed", category="passed", tier="none", reason="passed")
FAILED = Verdict(
    outcome="failed",
    category="assertion",
    tier="model",
    reason="AssertionError: outputs differ",
    exception_type="AssertionError",
)
INFRA = Verdict(outcome="infra_error", category="sandbox_failure", tier="infrastructure", reason="bwrap died")
TAMPERING_REASON = (
    "harness tampering: rmsnorm.py:29: use of sys._getframe; rmsnorm.py:30: use of the frame attribute f_back"
)


def uploaded_run(outcomes: dict[int, str], **kwargs) -> EvaluationRun:
    """A finished uploaded run of ``make_release`` (3 testable snippets) with the given verdicts."""
    return make_staged_run(
        model=LanguageModelFactory(),
        release=make_release(),
        status=EvaluationRun.Status.FINISHED,
        source=EvaluationRun.Source.UPLOADED,
        stages=[Completion.Stage.DONE] * 3,
        outcomes=outcomes,
        **kwargs,
    )


def mark_tampering(run: EvaluationRun, index: int) -> Completion:
    item = run.completions.order_by("snippet__task_version__task__key", "snippet__ordinal")[index]
    TestResult.objects.filter(completion=item).update(category="harness_tampering", exception_message="")
    Completion.objects.filter(pk=item.pk).update(error=TAMPERING_REASON)
    return item


def results(run: EvaluationRun) -> list[TestResult]:
    return list(
        TestResult.objects.filter(completion__run=run).order_by(
            "completion__snippet__task_version__task__key", "completion__snippet__ordinal"
        )
    )


# --- Harness tampering on the run page ---------------------------------------------------------------------


@pytest.mark.django_db
def test_staff_see_each_tampering_construct_and_line_the_public_only_how_many(client):
    run = uploaded_run({0: Outcome.PASSED, 1: Outcome.FAILED, 2: Outcome.FAILED})
    mark_tampering(run, 1)
    url = reverse("evaluation:run_detail", args=[run.pk])

    public = client.get(url).content.decode()
    assert "1</strong> completion failed as harness tampering" in public
    assert "sys._getframe" not in public and "rmsnorm.py:29" not in public
    assert TAMPERING_REDACTED in public  # the error list's reason, not the construct

    client.force_login(StaffUserFactory())
    staff = client.get(url).content.decode()
    assert "shown to maintainers only" in staff
    assert "<code>rmsnorm.py:29</code>" in staff and "use of sys._getframe" in staff
    assert "<code>rmsnorm.py:30</code>" in staff and "use of the frame attribute f_back" in staff
    assert reverse("leaderboard:snippet", args=["P", "a2"]) in staff
    assert TAMPERING_REDACTED not in staff


@pytest.mark.django_db
def test_a_signed_in_member_does_not_see_the_tampering_list(client):
    run = uploaded_run({0: Outcome.FAILED})
    mark_tampering(run, 0)
    client.force_login(UserFactory())
    body = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "sys._getframe" not in body and "1</strong> completion failed as harness tampering" in body


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (
            TAMPERING_REASON,
            [
                ("rmsnorm.py", 29, "use of sys._getframe"),
                ("rmsnorm.py", 30, "use of the frame attribute f_back"),
            ],
        ),
        (
            "harness tampering: the run replaced torch.allclose",
            [("", None, "the run replaced torch.allclose")],
        ),
        (
            "re-judged by a maintainer: harness tampering: m.py:3: import of ctypes (and 2 more)",
            [("m.py", 3, "import of ctypes (and 2 more)")],
        ),
        ("", []),
    ],
)
def test_tampering_reasons_are_split_into_constructs_with_file_and_line(reason, expected):
    assert [(f.file, f.line, f.construct) for f in tampering_findings(reason)] == expected


# --- Asking for a re-judge -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_rejudge_is_refused_to_anonymous_visitors_and_to_members(client):
    run = uploaded_run({0: Outcome.PASSED})
    url = reverse("evaluation:run_rejudge", args=[run.pk])

    anonymous = client.post(url)
    # to the sign-in page, coming back here afterwards
    assert anonymous.status_code == 302 and f"next={url}" in anonymous["Location"].replace("%2F", "/")
    client.force_login(UserFactory())
    assert client.post(url).status_code == 403
    assert client.get(url).status_code == 405
    assert not TestResult.objects.filter(rejudge_requested_at__isnull=False).exists()
    with pytest.raises(RejudgeError, match="only maintainers"):
        run_rejudge_passes(run=run, by=UserFactory())


@pytest.mark.django_db
def test_staff_rejudge_marks_every_pass_and_queues_the_messages_after_commit(
    client, django_capture_on_commit_callbacks
):
    run = uploaded_run({0: Outcome.PASSED, 1: Outcome.PASSED, 2: Outcome.FAILED})
    staff = StaffUserFactory(username="maria")
    client.force_login(staff)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "Re-judge passes" in page and "2 passes not yet re-judged conclusively" in page

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("evaluation:run_rejudge", args=[run.pk]), follow=True)
    assert "2 passes of run" in response.content.decode()
    assert len(callbacks) == 1
    first, second, failed = results(run)
    assert first.rejudge_pending and second.rejudge_pending and not failed.rejudge_pending
    assert first.rejudged_by == staff and failed.rejudge_requested_at is None

    staff_view = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert staff_view.count('data-rejudge="waiting"') == 2 and "<td>maria</td>" in staff_view
    assert 'hx-trigger="every 3s"' in staff_view  # the section polls while re-judges are waiting
    client.logout()
    public = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert public.count('data-rejudge="waiting"') == 2 and "maria" not in public
    assert "Re-judge passes" not in public


@pytest.mark.django_db
def test_rejudge_is_refused_for_an_imported_run_and_a_run_in_progress(client):
    staff = StaffUserFactory()
    imported = make_staged_run(
        model=LanguageModelFactory(),
        release=make_release(),
        source=EvaluationRun.Source.IMPORTED,
        status=EvaluationRun.Status.FINISHED,
        stages=[Completion.Stage.DONE] * 3,
        outcomes={0: Outcome.PASSED},
    )
    with pytest.raises(RejudgeError, match="holds imported results .* no code to judge again"):
        run_rejudge_passes(run=imported, by=staff)
    testing = make_staged_run(
        model=LanguageModelFactory(),
        release=make_release("r2"),
        source=EvaluationRun.Source.UPLOADED,
        outcomes={0: Outcome.PASSED},
    )
    client.force_login(staff)
    response = client.post(reverse("evaluation:run_rejudge", args=[testing.pk]), follow=True)
    assert f"Run {testing.pk} is still testing: re-judge it once final." in response.content.decode()
    assert not TestResult.objects.filter(rejudge_requested_at__isnull=False).exists()
    page = client.get(reverse("evaluation:run_detail", args=[imported.pk])).content.decode()
    assert "Re-judge passes" not in page


@pytest.mark.django_db
def test_a_generated_run_is_rejudged_like_an_uploaded_one_and_becomes_rerun(client):
    """The portal's own generations are judged by the same shared runner an upload's are: a verdict that
    fooled it would stand the same, so a maintainer can re-judge them too."""
    staff = StaffUserFactory()
    run = make_staged_run(
        model=LanguageModelFactory(),
        release=make_release(),
        status=EvaluationRun.Status.FINISHED,
        stages=[Completion.Stage.DONE] * 3,
        outcomes={0: Outcome.PASSED, 1: Outcome.PASSED, 2: Outcome.FAILED},
    )
    assert run.verification == EvaluationRun.Verification.GENERATED
    client.force_login(staff)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "Re-judge passes" in page

    assert run_rejudge_passes(run=run, by=staff) == 2
    first, second, _ = results(run)
    test_result_rejudge_record(completion_id=first.completion_id, verdict=PASSED, worker_host="w")
    run.refresh_from_db()
    assert run.verification == EvaluationRun.Verification.GENERATED  # one pass still waits
    test_result_rejudge_record(completion_id=second.completion_id, verdict=PASSED, worker_host="w")
    run.refresh_from_db()
    assert run.verification == EvaluationRun.Verification.RERUN
    assert run.source == EvaluationRun.Source.GENERATED

    # Re-testing its failed item brings a verdict nobody re-judged: back to the source's own level.
    assert run_rerun(run=run, outcomes=("failed",), by=staff) == 1
    run.refresh_from_db()
    assert run.verification == EvaluationRun.Verification.GENERATED


# --- Recording a re-judge -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_failing_rejudge_becomes_the_verdict_of_record_and_a_passing_one_confirms(client):
    run = uploaded_run({0: Outcome.PASSED, 1: Outcome.PASSED, 2: Outcome.FAILED})
    run_rejudge_passes(run=run, by=StaffUserFactory())
    honest, forged, _ = results(run)

    test_result_rejudge_record(completion_id=honest.completion_id, verdict=PASSED, worker_host="w")
    run.refresh_from_db()
    assert run.verification == EvaluationRun.Verification.UPLOADED  # one pass still waits
    changed = test_result_rejudge_record(completion_id=forged.completion_id, verdict=FAILED, worker_host="w")

    assert (changed.outcome, changed.passed, changed.category, changed.tier) == (
        "failed",
        False,
        "assertion",
        "model",
    )
    assert (changed.rejudge_outcome, changed.rejudge_agreed) == ("failed", False)
    assert Completion.objects.get(pk=forged.completion_id).error.startswith("re-judged by a maintainer: ")
    honest.refresh_from_db()
    assert (honest.outcome, honest.rejudge_agreed, honest.rejudge_pending) == ("passed", True, False)
    run.refresh_from_db()
    assert run.counts["passed"] == 1 and run.counts["failed"] == 2
    assert run.verification == EvaluationRun.Verification.RERUN

    # A second delivery of the same re-judge changes nothing.
    again = test_result_rejudge_record(completion_id=forged.completion_id, verdict=PASSED, worker_host="w")
    assert (again.outcome, again.rejudge_agreed) == ("failed", False)
    assert run_rejudge_passes(run=run, by=StaffUserFactory()) == 0

    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "Re-run by a maintainer" in page
    assert 'data-rejudge="changed"' in page and "changed: passed → failed" in page
    assert 'data-rejudge="agreed"' in page


@pytest.mark.django_db
def test_an_infrastructure_rejudge_is_inconclusive_and_is_asked_for_again():
    run = uploaded_run({0: Outcome.PASSED})
    staff = StaffUserFactory()
    run_rejudge_passes(run=run, by=staff)
    (result,) = results(run)

    recorded = test_result_rejudge_record(completion_id=result.completion_id, verdict=INFRA, worker_host="w")
    assert (recorded.outcome, recorded.rejudge_outcome, recorded.rejudge_agreed) == (
        "passed",
        "infra_error",
        None,
    )
    assert not recorded.rejudge_pending
    run.refresh_from_db()
    assert run.verification == EvaluationRun.Verification.UPLOADED
    assert run_rejudge_passes(run=run, by=staff) == 1
    result.refresh_from_db()
    assert result.rejudge_pending and result.rejudge_outcome == ""


@pytest.mark.django_db
def test_a_rejudge_nobody_asked_for_is_not_recorded():
    run = uploaded_run({0: Outcome.PASSED})
    (result,) = results(run)
    assert (
        test_result_rejudge_record(completion_id=result.completion_id, verdict=FAILED, worker_host="w")
        == result
    )
    result.refresh_from_db()
    assert (result.outcome, result.rejudged_at) == ("passed", None)
    assert test_result_rejudge_record(completion_id=10**9, verdict=FAILED, worker_host="w") is None


# --- End to end: a real worker re-judges cold ------------------------------------------------------------------


def _poison_cache(item: Completion, code: str, template: str) -> Path:
    """Write a passing verdict for ``code`` into the verdict cache the worker's shared runner reads."""
    task = task_version_task(task_version=item.snippet.task_version)
    key = VerdictCache.key(
        task_facts(task).content_hash,
        item.snippet.name,
        code,
        resolve_environment(settings.RCB_EVAL_PYTHON or None).id,
        template,
    )
    cache = VerdictCache(str(Path(settings.VAR_DIR) / "cache"))
    cache.put(key, PASSED)
    return Path(cache._path(key))


@pytest.mark.slow
def test_a_real_worker_rejudges_passes_cold_and_forged_or_cache_poisoned_passes_flip(
    start_worker, tmp_path, client
):
    task = example_tasks(("rmsnorm",))[0]
    snippet = task.snippets[0]
    reference = textwrap.dedent(snippet.code)
    poisoned_code = f'raise ValueError("wrong, but cached as a pass {uuid.uuid4().hex}")'
    codes = [
        reference,  # 0: an honest pass
        'raise RuntimeError("wrong on purpose")',  # 1: fails; its verdict is forged in the database
        poisoned_code,  # 2: fails; the verdict cache says it passed
        "import sys\nframe = sys._getframe()\n" + reference,  # 3: harness tampering (static screen)
    ]
    release = import_release(tmp_path, name="rejudge", task_ids=("rmsnorm",))
    run = run_create(
        model=LanguageModelFactory(),
        release=release,
        source="uploaded",
        verification="uploaded",
        n_completions=len(codes),
        predictions=[
            Prediction(task="rmsnorm", snippet=snippet.name, completion_idx=i, code=code)
            for i, code in enumerate(codes)
        ],
    )
    items = {c.completion_idx: c for c in run.completions.select_related("snippet__task_version")}
    cached_file = _poison_cache(items[2], items[2].code, run.template)
    try:
        start_worker(extra_env={"RCB_VERDICT_CACHE": "1", "RCB_LEADERBOARD_DEBOUNCE_S": "1"})
        wait_for(lambda: EvaluationRun.objects.get(pk=run.pk).is_final, timeout=120, what="the run to finish")
        first = {r.completion.completion_idx: r for r in TestResult.objects.filter(completion__run=run)}
        assert [first[i].outcome for i in range(4)] == ["passed", "failed", "passed", "failed"]
        assert first[2].cached and first[3].category == "harness_tampering"

        # A verdict forged behind the services' back; the board is aggregated with it.
        TestResult.objects.filter(pk=first[1].pk).update(
            outcome="passed", passed=True, category="passed", tier="none"
        )
        leaderboard_refresh_run(run=run)
        assert RunPaperScore.objects.get(run=run).passed == 3

        staff = StaffUserFactory()
        client.force_login(staff)
        page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
        assert "use of sys._getframe" in page and f"{snippet.file}:" in page
        client.post(reverse("evaluation:run_rejudge", args=[run.pk]))
        wait_for(
            lambda: (
                not TestResult.objects.filter(completion__run=run, rejudged_at__isnull=True)
                .exclude(rejudge_requested_at__isnull=True)
                .exists()
            ),
            timeout=120,
            what="the re-judges",
        )
        after = {r.completion.completion_idx: r for r in TestResult.objects.filter(completion__run=run)}
        assert (after[0].outcome, after[0].rejudge_agreed, after[0].rejudged_by) == ("passed", True, staff)
        for i in (1, 2):
            assert (after[i].outcome, after[i].rejudge_agreed, after[i].cached) == ("failed", False, False)
            assert after[i].rejudge_outcome == "failed" and after[i].rejudge_worker_host
        assert after[3].rejudge_requested_at is None  # failures are not re-judged
        run.refresh_from_db()
        assert run.counts["passed"] == 1
        assert run.verification == EvaluationRun.Verification.RERUN
        wait_for(
            lambda: RunPaperScore.objects.get(run=run).passed == 1,
            timeout=60,
            what="the board to re-aggregate",
        )
        public = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
        assert public.count("changed: passed → failed") == 2
    finally:
        cached_file.unlink(missing_ok=True)
