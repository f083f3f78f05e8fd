"""Task environments in the portal (docs/environments.md): ``import_pset --infer-requirements`` stores each
version's lock, the worker runs a version in its own environment, and a version whose requirement cannot be
resolved gets an infrastructure verdict naming the package on the run page, charged to no model."""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from contributions.models import TaskVersion
from evaluation.models import EvaluationRun, TestResult
from evaluation.services.runs import run_create
from evaluation.services.verdicts import completion_verdict, test_result_record
from evaluation.workspace import cold_runner, task_version_environment
from researchcodebench.envs import Lock
from researchcodebench.predictions import Prediction
from tests.factories import LanguageModelFactory

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

ENV_PSET = Path(__file__).resolve().parents[1] / "researchcodebench" / "fixtures" / "env_pset"


@pytest.fixture
def env_settings(settings, tmp_path_factory):
    if shutil.which("bwrap") is None or not Path("/opt/wheels").is_dir():
        pytest.skip("needs bubblewrap and the local CPU torch wheel (/opt/wheels)")
    settings.RCB_ENV_DIR = tmp_path_factory.getbasetemp() / "portal-envs"
    settings.RCB_ENV_FIND_LINKS = ["/opt/wheels"]
    settings.RCB_ENV_INDEX_URL = "file:///opt/pypi/simple"
    settings.RCB_ENV_EXTRA_INDEX_URLS = ["file:///opt/pypi-more/simple"]
    settings.RCB_VERDICT_CACHE = False
    return settings


def _import(tmp_path: Path) -> tuple[str, str]:
    pset = tmp_path / "pset"
    shutil.copytree(ENV_PSET, pset)
    (pset / "base-only" / "task.yaml").write_text("requirements:\n  - no-such-package-rcb==1.0\n")
    out, err = StringIO(), StringIO()
    call_command(
        "import_pset", str(pset), "--release", "envs", "--infer-requirements", stdout=out, stderr=err
    )
    return out.getvalue(), err.getvalue()


def test_import_stores_each_versions_lock_and_an_unresolvable_requirement_is_an_infrastructure_error(
    env_settings, tmp_path, client
):
    out, err = _import(tmp_path)
    versions = {v.task.key: v for v in TaskVersion.objects.select_related("task")}
    einops, pandas, broken = versions["uses-einops"], versions["uses-pandas"], versions["base-only"]
    assert "task uses-einops: einops (inferred: einops -> einops); environment " in out
    assert (einops.environment_requirements, pandas.environment_requirements) == (["einops"], ["pandas"])
    assert einops.environment_hash == Lock.from_text(einops.environment_lock).hash
    assert "einops==0.8.2" in einops.environment_lock and "torch==2.13.0+cpu" in pandas.environment_lock
    assert broken.environment_requirements == ["no-such-package-rcb==1.0"] and broken.environment_lock == ""
    assert "warning: task base-only" in err and "'no-such-package-rcb'" in err

    # A second import of the same pset keeps the stored locks (a version's environment never changes).
    before = einops.environment_hash
    _import(tmp_path / "again")
    einops.refresh_from_db()
    assert einops.environment_hash == before

    # The worker's judging path: the einops version runs in its own environment and passes ...
    environment = task_version_environment(task_version=einops)
    assert environment is not None and "einops==0.8.2" in environment.packages
    model = LanguageModelFactory()
    run = run_create(
        model=model,
        task_versions=[einops, broken],
        source=EvaluationRun.Source.UPLOADED,
        verification=EvaluationRun.Verification.UPLOADED,
        predictions=[
            Prediction("uses-einops", "flatten patches", code=einops.snippets.get().code),
            Prediction("base-only", "scale", code=broken.snippets.get().code),
        ],
    )
    for item in run.completions.select_related("run", "snippet__task_version__task"):
        verdict = completion_verdict(item=item, runner=cold_runner)
        test_result_record(completion_id=item.pk, verdict=verdict, worker_host="test", attempt=1)
    results = {
        r.completion.snippet.task_version.task.key: r
        for r in TestResult.objects.select_related("completion__snippet__task_version__task")
    }
    assert results["uses-einops"].outcome == TestResult.Outcome.PASSED
    assert results["uses-einops"].environment == environment.id
    # ... and the unresolvable one is an infrastructure error naming the package, not the model's failure.
    broken_result = results["base-only"]
    assert broken_result.outcome == TestResult.Outcome.INFRA_ERROR
    assert broken_result.category == "missing_dependency"
    assert "no-such-package-rcb" in broken_result.exception_message
    assert "no-such-package-rcb" in broken_result.completion.error
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.FINISHED
    assert "1 infrastructure errors (not counted against the model)" in run.status_reason
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "no-such-package-rcb" in html


def test_a_version_without_lock_or_requirements_runs_in_the_default_interpreter(env_settings):
    version = TaskVersion(environment_lock="", environment_requirements=[])
    assert task_version_environment(task_version=version) is None
