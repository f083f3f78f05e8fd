"""Importing the paper's published results (evaluation/services/published.py): both formats, idempotency, exact
scores, names, links. Reading and re-encoding the sources: test_published_source.py."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.db.models import Count

from contributions.models import Paper, Release, ReleaseEntry, TaskVersion
from contributions.task_meta import meta_from_json, meta_to_json
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from evaluation.published_source import RELEASE_NAME
from evaluation.selectors.runs import run_snippet_results
from evaluation.services.published import published_import, published_verify
from researchcodebench.arxiv import arxiv_id
from researchcodebench.scoring import line_rates, load_published, per_paper, task_rates
from tests.evaluation.published_helpers import FIXTURE, ORIGINAL, REGISTRY, needs_original, small_fixture
from tests.factories import (
    LanguageModelFactory,
    ReleaseFactory,
    SnippetFactory,
    TaskFactory,
    TaskVersionFactory,
)
from tests.factories.builders import row_counts

pytestmark = pytest.mark.django_db


def scores_of(model_key: str) -> tuple[float, float]:
    run = EvaluationRun.objects.get(model__key=model_key, release__name=RELEASE_NAME)
    results = run_snippet_results(run=run)
    return line_rates(results).mean, task_rates(results).mean


# ------------------------------------------------------------------------------------------ shipped fixture


def test_shipped_fixture_reproduces_the_papers_headline_scores():
    report = published_import(source=FIXTURE)
    # Its speed goal (30 s) is bench/portal_timings.py's: a test asserts behaviour, never speed.
    print(f"\npublished import of the shipped fixture: {report.duration_s:.1f} s")

    assert report.models_created == 32
    assert report.runs_created == 32
    line, task = scores_of("GEMINI_2_5_PRO_PREVIEW_05_06")
    assert (round(line, 2), round(task, 2)) == (37.34, 64.15)
    line, task = scores_of("OPENROUTER_MISTRAL_CODESTRAL_MAMBA")
    assert (round(line, 2), round(task, 2)) == (0.76, 1.42)
    best = max(EvaluationRun.objects.all(), key=lambda run: line_rates(run_snippet_results(run=run)).mean)
    assert best.model.key == "GEMINI_2_5_PRO_PREVIEW_05_06"
    assert published_verify(source=FIXTURE) == []


def test_second_import_changes_no_rows():
    published_import(source=FIXTURE)
    before = row_counts()

    again = published_import(source=FIXTURE)

    assert row_counts() == before
    assert not again.changed
    assert before["Completion"] == before["TestResult"] == 6784
    assert before["Snippet"] == 212 and before["Paper"] == 20 and before["LanguageModel"] == 32


def test_runs_are_finished_published_imports_with_one_result_per_record():
    published_import(source=FIXTURE)
    runs = EvaluationRun.objects.all()

    assert {
        (r.source, r.verification, r.status, r.template, r.with_paper, r.n_completions) for r in runs
    } == {("imported", "published", "finished", "rcb-2025", True, 1)}
    assert Release.objects.get(name=RELEASE_NAME).is_default
    assert set(TaskVersion.objects.values_list("origin", "has_files")) == {("published", False)}
    assert not Completion.objects.exclude(stage=Completion.Stage.DONE).exists()
    assert not Completion.objects.exclude(code="").exists()


def test_exit_code_124_becomes_a_timeout_and_plain_failures_have_no_guessed_category():
    published_import(source=FIXTURE)

    timeouts = TestResult.objects.filter(exit_code=124)
    assert timeouts.exists()
    assert set(timeouts.values_list("outcome", "category", "passed")) == {("timeout", "timeout", False)}
    assert set(TestResult.objects.filter(exit_code=1).values_list("outcome", "category")) == {("failed", "")}
    assert set(TestResult.objects.filter(exit_code=0).values_list("outcome", "passed")) == {("passed", True)}


def test_model_metadata_is_normalised_and_models_are_inactive():
    published_import(source=FIXTURE)

    deepseek = LanguageModel.objects.get(key="OPENROUTER_DEEPSEEK_CHAT_V3_0324")
    assert deepseek.knowledge_cutoff == dt.date(2024, 7, 1)
    assert deepseek.knowledge_cutoff_raw == "2024-7"
    assert deepseek.provider == LanguageModel.Provider.OPENROUTER
    grok = LanguageModel.objects.get(key="GROK_3_BETA")
    assert grok.knowledge_cutoff == dt.date(2024, 11, 17)
    assert grok.provider == LanguageModel.Provider.XAI
    o3 = LanguageModel.objects.get(key="O3_HIGH")
    assert o3.request_options["reasoning"] == {"effort": "high"}
    assert o3.provider_model_id == "o3-2025-04-16"
    assert str(o3.input_cost_per_mtok) == "10.0000"
    assert LanguageModel.objects.filter(name__in=["O3 (High)", "O4-Mini (High)"]).count() == 2
    assert not LanguageModel.objects.filter(active=True).exists()
    assert LanguageModel.objects.values("name").distinct().count() == 32


# -------------------------------------------------------------------------------------- the original file


@needs_original
def test_original_file_import_reproduces_every_published_score():
    report = published_import(source=ORIGINAL, papers=REGISTRY)

    assert report.runs_created == 32 and report.snippets_created == 212
    assert published_verify(source=ORIGINAL) == []
    published = load_published(ORIGINAL)
    for run in EvaluationRun.objects.select_related("model"):
        results = run_snippet_results(run=run)
        expected = published.overall[run.model.key]
        assert line_rates(results).mean == pytest.approx(expected["line_rates"]["mean"], abs=1e-6)
        assert task_rates(results).mean == pytest.approx(expected["task_rates"]["mean"], abs=1e-6)
        for paper, rates in per_paper(results).items():
            want = published.problem_scores[paper][run.model.key]["mean"]
            assert rates.mean == pytest.approx(want, abs=1e-6)
    outcomes = dict(TestResult.objects.values_list("outcome").annotate(n=Count("id")))
    raw = json.loads(ORIGINAL.read_text())
    codes = [
        rec["exit_code"]
        for paper in raw["results"].values()
        for model in paper["results"].values()
        for recs in model["results"].values()
        for rec in recs
    ]
    assert outcomes == {"passed": codes.count(0), "failed": codes.count(1), "timeout": codes.count(124)}


@needs_original
def test_fixture_import_gives_the_original_files_scores():
    published_import(source=FIXTURE)

    assert published_verify(source=ORIGINAL) == []


@needs_original
def test_papers_get_the_arxiv_ids_of_the_registry_by_the_one_parser():
    published_import(source=FIXTURE, papers=REGISTRY)

    registry = {e["id"]: e.get("arxiv_abs") for e in yaml.safe_load(REGISTRY.read_text())}
    ids = dict(Paper.objects.filter(key__in=list(registry)).values_list("key", "arxiv_id"))
    assert ids == {key: arxiv_id(url) for key, url in registry.items()}
    assert (ids["DyT"], ids["SISS"], ids["GPS"]) == ("2503.10622", "2503.01034", "")


def test_metadata_only_versions_store_the_registry_entry_as_every_version_does(tmp_path):
    published_import(source=small_fixture(tmp_path))

    version = TaskVersion.objects.get(task__key="alpha", has_files=False)
    assert meta_from_json(version.meta).arxiv_abs == "https://arxiv.org/abs/2401.00001v2"
    assert version.meta == meta_to_json(meta_from_json(version.meta)) and version.meta["extra_order"] == []
    assert list(version.snippets.values_list("name", "lines", "file")) == [
        ("a1", 4, "model.py"),
        ("a2", 1, "model.py"),
    ]


# ---------------------------------------------------------------------------------------- small fixtures


def test_colliding_display_names_get_the_reasoning_effort(tmp_path):
    report = published_import(source=small_fixture(tmp_path))

    names = dict(LanguageModel.objects.values_list("key", "name"))
    assert names == {"ACME_HIGH": "Acme-1 (high)", "ACME_LOW": "Acme-1 (low)", "OTHER": "Other"}
    assert report.renamed == {"ACME_HIGH": "Acme-1 (high)", "ACME_LOW": "Acme-1 (low)"}


def test_colliding_names_with_the_same_effort_fall_back_to_the_key_or_provider_id(tmp_path):
    models = json.loads(small_fixture(tmp_path).read_text())["models"]
    models[1]["request_options"] = {"reasoning_effort": "high"}
    models[1]["provider_model_id"] = "acme/one-preview"
    published_import(source=small_fixture(tmp_path, models=models))

    names = dict(LanguageModel.objects.values_list("key", "name"))
    assert names["ACME_HIGH"] == "Acme-1 (acme/one)"
    assert names["ACME_LOW"] == "Acme-1 (acme/one-preview)"


def test_a_name_taken_by_another_model_is_not_reused(tmp_path):
    LanguageModelFactory(key="SOMEONE", name="Other")

    published_import(source=small_fixture(tmp_path))

    assert LanguageModel.objects.get(key="OTHER").name != "Other"
    assert LanguageModel.objects.values("name").distinct().count() == 4


def test_completion_indices_give_n_completions_and_missing_records_stay_missing(tmp_path):
    source = small_fixture(tmp_path)
    published_import(source=source)

    high = EvaluationRun.objects.get(model__key="ACME_HIGH")
    low = EvaluationRun.objects.get(model__key="ACME_LOW")
    assert (high.n_completions, high.completions.count()) == (2, 6)
    assert (low.n_completions, low.completions.count()) == (1, 2)
    assert high.counts == {"failed": 2, "passed": 3, "timeout": 1, "total": 6}
    assert published_verify(source=source) == []


def test_verify_reports_a_score_the_database_does_not_reproduce(tmp_path):
    published_import(source=small_fixture(tmp_path))
    wrong = small_fixture(
        tmp_path, published_scores={"OTHER": {"line": 99.0, "task": 100.0, "papers": {"alpha": 100.0}}}
    )

    mismatches = published_verify(source=wrong)

    assert [(m.model, m.what, m.expected, m.actual) for m in mismatches] == [("OTHER", "line", 99.0, 100.0)]


def test_reimport_updates_changed_model_metadata_but_only_fills_empty_paper_fields(tmp_path):
    source = small_fixture(tmp_path)
    published_import(source=source)
    LanguageModel.objects.filter(key="OTHER").update(developer="Someone else", company="")
    Paper.objects.filter(key="alpha").update(title="Alpha (edited)", arxiv_abs="", arxiv_id="")

    report = published_import(source=source)

    assert (report.models_updated, report.papers_updated) == (1, 1)
    other = LanguageModel.objects.get(key="OTHER")
    assert (other.developer, other.company) == ("Acme", "XAI")
    alpha = Paper.objects.get(key="alpha")
    assert alpha.title == "Alpha (edited)"
    assert (alpha.arxiv_abs, alpha.arxiv_id) == ("https://arxiv.org/abs/2401.00001v2", "2401.00001")


def test_results_link_to_an_imported_version_with_the_same_snippets(tmp_path):
    task = TaskFactory(paper__key="alpha", paper__title="Alpha")
    version = TaskVersionFactory(task=task, content_hash="f" * 64)
    SnippetFactory(task_version=version, name="a1", ordinal=0, lines=4, code="x = 1")
    SnippetFactory(task_version=version, name="a2", ordinal=1, lines=1, code="y = 2")

    report = published_import(source=small_fixture(tmp_path))

    assert report.task_versions_linked == 1 and report.task_versions_created == 1
    assert ReleaseEntry.objects.get(release__name=RELEASE_NAME, task=task).task_version == version
    assert Completion.objects.filter(snippet__task_version=version).count() == 4 + 2 + 2
    assert not TaskVersion.objects.filter(task=task, has_files=False).exists()
    assert Paper.objects.get(key="alpha").arxiv_id == "2401.00001"


def test_an_imported_version_with_other_line_counts_is_not_linked(tmp_path):
    task = TaskFactory(paper__key="alpha", paper__title="Alpha")
    version = TaskVersionFactory(task=task, content_hash="f" * 64)
    SnippetFactory(task_version=version, name="a1", ordinal=0, lines=5)
    SnippetFactory(task_version=version, name="a2", ordinal=1, lines=1)

    report = published_import(source=small_fixture(tmp_path))

    linked = ReleaseEntry.objects.get(release__name=RELEASE_NAME, task=task).task_version
    assert linked != version and not linked.has_files and linked.number == 2
    assert any("other line counts" in note for note in report.notes)


def test_an_existing_default_release_stays_the_default(tmp_path):
    ReleaseFactory(name="main", is_default=True)

    report = published_import(source=small_fixture(tmp_path))

    assert not report.made_default
    assert Release.objects.get(is_default=True).name == "main"


def test_command_imports_verifies_and_reports_bad_input(tmp_path, capsys):
    call_command("import_published", str(small_fixture(tmp_path)))
    out = capsys.readouterr().out
    assert "runs: 3 created" in out and "recomputed scores equal the file's" in out

    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_published", str(tmp_path / "missing.json"))
