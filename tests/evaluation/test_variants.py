"""Impossible variants in the portal (issue 32): made when a contribution is validated, shown per snippet on its
page, stored with the task version it is published as, and seeded from there into the runner that confirms
passes on it, which then derives nothing."""

from __future__ import annotations

import contextlib
import io
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from contributions.intake import IntakeLimits, IntakeResult, intake_archive
from contributions.models import Proposal, TaskVersion
from contributions.services import proposal_create, proposal_review, proposal_submit, revision_create
from contributions.services.proposals import RUBRIC_KEYS
from contributions.task_folders import revision_task, task_version_task
from evaluation.services.validation import revision_validate
from evaluation.services.verdicts import completion_verdict
from evaluation.workspace import runner_seed_variants
from researchcodebench.runner import Runner
from researchcodebench.variants import SnippetVariants
from tests.factories import MaintainerFactory, UserFactory
from tests.factories.evaluation import CompletionFactory
from tests.researchcodebench.runner_fixtures import checked_local_sandbox, eval_python

FIXTURES = Path(__file__).resolve().parents[1] / "researchcodebench" / "fixtures" / "validation"
TOY_MANIFEST = {"annotated_files": ["toy.py"], "paper_file": "paper2code_paper.md"}
#: A correct answer of the checked snippet that is not its reference: its pass is confirmed against a variant.
HONEST = "    result = [factor * v for v in values]"


def zipped(root: Path) -> IntakeResult:
    """A task folder as the contribution form receives it: a .zip upload read by the safe intake."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.writestr(path.relative_to(root).as_posix(), path.read_bytes())
    buffer.seek(0)
    return intake_archive(filename=f"{root.name}.zip", stream=buffer, limits=IntakeLimits.from_settings())


@pytest.fixture
def runner(tmp_path):
    """A warm runner of its own with no store of variants: whatever it has, it derived or was seeded."""
    sandbox = checked_local_sandbox(tmp_path / "scratch")
    with Runner(sandbox=sandbox, environment=eval_python(), workers=2, variant_store=None) as fresh:
        yield fresh


@pytest.fixture
def published(runner, client, django_capture_on_commit_callbacks) -> tuple[Proposal, TaskVersion, dict]:
    """The unchecked-snippet fixture contributed, validated with ``runner``, its page seen by the maintainer
    (returned), approved with 'shift values' accepted as unchecked, and published."""
    author, maintainer = UserFactory(), MaintainerFactory()
    proposal = proposal_create(author=author, task_key="toy-variants", meta={"title": "Toy variants"})
    revision_create(
        proposal=proposal,
        by=author,
        intake_result=zipped(FIXTURES / "unchecked-snippet"),
        manifest=TOY_MANIFEST,
    )
    with django_capture_on_commit_callbacks(execute=False):
        proposal_submit(proposal=proposal, by=author)
    assert revision_validate(revision_id=proposal.revisions.get().pk, runner=runner) == "failed"
    proposal.refresh_from_db()
    client.force_login(maintainer)
    page = client.get(reverse("contributions:proposal_detail", kwargs={"proposal_id": proposal.pk}))
    accepted = {"reason": "unobservable", "explanation": "shift is not used by the method this task is about"}
    with django_capture_on_commit_callbacks(execute=True):
        proposal_review(
            proposal=proposal,
            reviewer=maintainer,
            decision="approve",
            rubric=dict.fromkeys(RUBRIC_KEYS, True),
            overrides={"shift values": accepted},
        )
    proposal.refresh_from_db()
    return proposal, proposal.published_version, {"page": page.content.decode(), "state": proposal.state}


@pytest.mark.django_db
def test_a_validated_contribution_is_published_with_its_variants_shown_per_snippet_on_its_page(
    published, runner
):
    proposal, version, seen = published
    report = proposal.revisions.get().validation_report
    assert set(report["variants"]) == {"scale values", "shift values"}
    assert report["variants_environment"] == runner.environment.id
    # One finding per cause: the snippet its test does not check has no variant for that reason, and the
    # mutation check's finding (one override) stands for both; the page says why it has none.
    errors = [(f["check"], f["snippet"]) for f in report["findings"] if f["severity"] == "error"]
    assert errors == [("mutation", "shift values")]
    assert not SnippetVariants.from_dict(report["variants"]["shift values"]).variants
    # The page: the checked snippet's variants counted and described, the other flagged.
    checked = SnippetVariants.from_dict(report["variants"]["scale values"])
    count = len(checked.variants)
    assert count >= 1
    html = seen["page"]
    assert f"{count} impossible variant{'s' if count > 1 else ''}" in html
    assert checked.variants[0].describe().split(":")[0] in html
    assert "no impossible variant" in html and "no test that the reference passes runs this snippet" in html
    assert "Needs a fix: 1 snippet not checked by its test" in html
    # The maintainer accepted the flagged snippet; the published version stores the whole set where it holds.
    assert seen["state"] == Proposal.State.PUBLISHED
    assert version.variants == report["variants"]
    assert version.variants_environment == runner.environment.id
    # They were derived from the very files the version holds (the variants' changes are offsets in them).
    assert runner.facts(revision_task(revision=proposal.revisions.get())).content_hash == version.content_hash
    assert version.snippets.get(name="shift values").checked_by_test is False


@pytest.mark.django_db
def test_a_worker_seeded_from_the_version_confirms_a_pass_without_deriving_again(published, tmp_path):
    _proposal, version, _seen = published
    snippet = version.snippets.get(name="scale values")
    item = CompletionFactory(snippet=snippet, code=HONEST, code_extracted=True)
    sandbox = checked_local_sandbox(tmp_path / "worker")
    with Runner(sandbox=sandbox, environment=eval_python(), workers=1, variant_store=None) as worker:
        verdict = completion_verdict(item=item, runner=lambda: contextlib.nullcontext(worker))
        task = task_version_task(task_version=version)
        assert verdict.passed and verdict.confirmation == "confirmed", verdict.reason
        stored_ids = {v["id"] for v in version.variants["scale values"]["variants"]}
        assert verdict.variant in stored_ids
        assert worker.variant_sources == {
            (task.root, "scale values"): "stored",
            (task.root, "shift values"): "stored",
        }


@pytest.mark.django_db
def test_variants_of_another_environment_are_not_seeded(published, runner):
    _proposal, version, _seen = published
    TaskVersion.objects.filter(pk=version.pk).update(variants_environment="py3.11.0-another")
    version.refresh_from_db()
    task = task_version_task(task_version=version)
    assert runner_seed_variants(runner=runner, task=task, task_version=version) == 0
    assert (task.root, "scale values") not in runner.variant_sources
