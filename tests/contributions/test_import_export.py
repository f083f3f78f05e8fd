"""Importing original-format psets as releases and exporting them back, byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contributions import services
from contributions.models import FileBlob, Paper, Release, Snippet, Task, TaskVersion
from contributions.selectors.release_export import release_export
from researchcodebench.pset import content_hash, read_pset, task_files
from tests.contributions.conftest import REPO, all_files, pset_content
from tests.factories import ReleaseEntryFactory, ReleaseFactory, TaskVersionFactory
from tests.factories.builders import row_counts

pytestmark = pytest.mark.django_db


def inspect(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "researchcodebench", "inspect", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_import_stores_every_task_snippet_and_file_as_read_pset_reads_them(example_pset):
    pset = read_pset(example_pset)
    release = services.release_create_from_pset(path=example_pset, name="r1", title="First")

    entries = list(release.entries.select_related("task_version__task"))
    assert [e.task.key for e in entries] == [t.id for t in pset.tasks]
    for entry, task in zip(entries, pset.tasks, strict=True):
        version = entry.task_version
        assert version.number == 1 and version.has_files and version.origin == "imported"
        assert version.content_hash == content_hash(task.root)
        assert sorted(version.files) == task_files(task.root)
        for rel, sha in version.files.items():
            assert bytes(FileBlob.objects.get(sha256=sha).content) == (Path(task.root) / rel).read_bytes()
        assert version.total_lines == sum(s.lines for s in task.snippets)
        assert version.needs_gpu == task.manifest.needs_gpu
        assert version.paper_file == (task.paper_file or "")
        assert version.meta["id"] == task.id and version.manifest == task.manifest.to_dict()
        stored = list(version.snippets.select_related("parent").order_by("ordinal"))
        assert [s.name for s in stored] == [s.name for s in task.snippets]
        assert [(s.file, s.start_line, s.end_line, s.lines, s.depth, s.code) for s in stored] == [
            (s.file, s.start_line, s.end_line, s.lines, s.depth, s.code) for s in task.snippets
        ]
        assert [s.parent.name if s.parent else None for s in stored] == [s.parent for s in task.snippets]
    assert Snippet.objects.count() == sum(len(t.snippets) for t in pset.tasks)
    assert Paper.objects.count() == len(pset.tasks)


def test_paper_rows_carry_registry_metadata_with_parsed_arxiv_id_and_dates(small_pset):
    services.release_create_from_pset(path=small_pset(), name="r1")
    paper = Paper.objects.get(key="alpha")
    assert paper.title == "Paper alpha" and paper.venue == "ICLR2025"
    assert paper.arxiv_id == "2501.00000" and paper.arxiv_abs == "https://arxiv.org/abs/2501.00000v2"
    assert str(paper.arxiv_v1_date) == "2024-06-20" and str(paper.first_commit_date) == "2025-01-07"
    assert paper.last_commit_date is None and paper.github_url == "https://github.com/example/alpha"


def test_export_writes_every_imported_file_byte_identical_and_inspect_reads_it(example_pset, tmp_path):
    release = services.release_create_from_pset(path=example_pset, name="r1")
    out = release_export(release=release, out_dir=tmp_path / "out")
    assert all_files(out) == pset_content(example_pset)
    result = inspect(out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 errors" in result.stdout


def test_hostile_original_format_pset_imports_and_exports_byte_identical(hostile_pset, tmp_path):
    pset = read_pset(hostile_pset)
    release = services.release_create_from_pset(path=hostile_pset, name="hostile")
    assert set(release.entries.values_list("task__key", flat=True)) == {t.id for t in pset.tasks}
    assert Snippet.objects.count() == sum(len(t.snippets) for t in pset.tasks)
    out = release_export(release=release, out_dir=tmp_path / "out")
    exported = all_files(out)
    assert exported == all_files(hostile_pset)
    assert b"\r\n" in exported["crlf tabs/loss.py"]
    assert b"\t" in exported["crlf tabs/lib/tabbed.py"]
    assert "attn: v2, final=yes/deep/a b/c,d/e=f/model core.py" in exported
    result = inspect(out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 errors" in result.stdout


def test_export_of_a_composed_release_writes_a_registry_that_reads_back_the_same(hostile_pset, tmp_path):
    source = services.release_create_from_pset(path=hostile_pset, name="hostile")
    composed = ReleaseFactory(name="composed")
    for position, entry in enumerate(source.entries.all()):
        ReleaseEntryFactory(release=composed, task_version=entry.task_version, position=position)
    out = release_export(release=composed, out_dir=tmp_path / "out")
    assert "papers.yaml" in all_files(out)
    original, exported = read_pset(hostile_pset), read_pset(out)
    assert [t.meta for t in exported.tasks] == [t.meta for t in original.tasks]
    assert [t.snippets for t in exported.tasks] == [t.snippets for t in original.tasks]
    assert not [i for _, i in exported.all_issues() if i.is_error]


def test_reimporting_an_identical_pset_returns_the_same_release_and_adds_no_rows(example_pset):
    first = services.release_create_from_pset(path=example_pset, name="r1")
    before = row_counts()
    again = services.release_create_from_pset(path=example_pset, name="r1", title="other title")
    assert again.pk == first.pk
    assert row_counts() == before


def test_identical_tasks_under_a_new_release_name_reuse_their_versions(example_pset):
    services.release_create_from_pset(path=example_pset, name="r1")
    versions = TaskVersion.objects.count()
    second = services.release_create_from_pset(path=example_pset, name="r2")
    assert TaskVersion.objects.count() == versions
    assert second.entries.count() == Release.objects.get(name="r1").entries.count()


def test_changed_file_creates_version_two_and_keeps_version_one(small_pset, tmp_path):
    root = small_pset()
    r1 = services.release_create_from_pset(path=root, name="r1")
    v1 = TaskVersion.objects.get(task__key="alpha", number=1)
    v1_files, v1_code = dict(v1.files), list(v1.snippets.values_list("code", flat=True))
    model = root / "alpha" / "model.py"
    model.write_text(model.read_text().replace("y = y + 1", "y = y + 2"), encoding="utf-8")

    services.release_create_from_pset(path=root, name="r2")
    v2 = TaskVersion.objects.get(task__key="alpha", number=2)
    assert v2.content_hash != v1.content_hash
    assert "y = y + 2" in v2.snippets.get(name="shift").code
    v1.refresh_from_db()
    assert v1.files == v1_files and list(v1.snippets.values_list("code", flat=True)) == v1_code
    assert r1.entries.get(task__key="alpha").task_version == v1
    assert TaskVersion.objects.filter(task__key="beta").count() == 1
    out = release_export(release=r1, out_dir=tmp_path / "r1")
    assert b"y = y + 1" in (out / "alpha" / "model.py").read_bytes()


def test_a_taken_release_name_with_different_contents_is_refused(small_pset):
    services.release_create_from_pset(path=small_pset("a", ids=("alpha",)), name="r1")
    with pytest.raises(services.CatalogueError, match=r"release 'r1' already exists.*beta"):
        services.release_create_from_pset(path=small_pset("b", ids=("alpha", "beta")), name="r1")
    assert Task.objects.filter(key="beta").count() == 0


def test_pset_with_annotation_errors_is_refused_with_file_and_line(small_pset):
    broken = 'def f(x):\n    # <paper2code name="body">\n    return x\n\n\ndef g(x):\n    return x\n'
    root = small_pset(ids=("alpha",), model=broken)
    with pytest.raises(services.CatalogueError) as caught:
        services.release_create_from_pset(path=root, name="r1")
    message = str(caught.value)
    assert "alpha/model.py:2:" in message and "body" in message
    assert "--allow-errors" in message
    assert row_counts()["Release"] == 0 and row_counts()["Paper"] == 0


def test_allow_errors_imports_and_keeps_the_validation_report(small_pset):
    unclosed = 'def f(x):\n    # <paper2code name="body">\n    return x\n'
    root = small_pset(ids=("alpha",), model=unclosed)
    release = services.release_create_from_pset(path=root, name="r1", allow_errors=True)
    version = release.entries.get().task_version
    assert any(i["severity"] == "error" and i["line"] == 2 for i in version.validation_report)


def test_duplicate_snippet_names_are_refused_even_when_errors_are_allowed(small_pset):
    twice = (
        'def f(x):\n    # <paper2code name="same">\n    y = x\n    # </paper2code name="same">\n'
        '    # <paper2code name="same">\n    return y\n    # </paper2code name="same">\n'
    )
    root = small_pset(ids=("alpha",), model=twice)
    with pytest.raises(services.CatalogueError, match=r"alpha.*model\.py:5: duplicate snippet name 'same'"):
        services.release_create_from_pset(path=root, name="r1", allow_errors=True)
    assert Release.objects.count() == 0


def test_missing_registry_and_bad_release_names_are_clear_errors(tmp_path, small_pset):
    with pytest.raises(services.CatalogueError, match="papers.yaml"):
        services.release_create_from_pset(path=tmp_path, name="r1")
    with pytest.raises(services.CatalogueError, match="not valid"):
        services.release_create_from_pset(path=small_pset(), name="has space")


def test_task_folder_with_a_symbolic_link_is_refused(small_pset, tmp_path):
    root = small_pset(ids=("alpha",))
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the task\n")
    (root / "alpha" / "link.txt").symlink_to(secret)
    with pytest.raises(services.CatalogueError, match=r"alpha.*link\.txt is a symbolic link"):
        services.release_create_from_pset(path=root, name="r1")


def test_metadata_only_versions_cannot_be_exported_and_the_error_names_them(small_pset, tmp_path):
    release = services.release_create_from_pset(path=small_pset(ids=("alpha",)), name="r1")
    meta_only = TaskVersionFactory(
        task__paper__key="DyT",
        task__paper__title="Transformers without Normalization",
        content_hash="published:DyT",
        origin="published",
        has_files=False,
    )
    ReleaseEntryFactory(release=release, task_version=meta_only, position=1)
    with pytest.raises(services.CatalogueError, match=r"metadata-only.*DyT v1"):
        release_export(release=release, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_refuses_a_folder_that_is_not_empty(small_pset, tmp_path):
    release = services.release_create_from_pset(path=small_pset(), name="r1")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(services.CatalogueError, match="not empty"):
        release_export(release=release, out_dir=tmp_path / "out")


def test_exactly_one_release_is_the_default(small_pset):
    root = small_pset()
    r1 = services.release_create_from_pset(path=root, name="r1")
    r2 = services.release_create_from_pset(path=root, name="r2")
    services.release_set_default(release=r1)
    services.release_set_default(release=r2)
    assert list(Release.objects.filter(is_default=True).values_list("name", flat=True)) == ["r2"]


def test_real_original_registry_with_stub_task_folders_round_trips(tmp_path):
    """The original benchmark's own papers.yaml (20 tasks), with a stub folder for each of its tasks."""
    registry = REPO.parent / "shared" / "data" / "papers.yaml"
    if not registry.is_file():
        pytest.skip(f"{registry} is absent (the published registry lives outside the repository)")

    root = tmp_path / "original"
    root.mkdir()
    (root / "papers.yaml").write_bytes(registry.read_bytes())
    for entry in yaml.safe_load(registry.read_text(encoding="utf-8")):
        folder = root / str(entry["id"])
        annotated = entry["annotated_file_paths"]
        context = entry["context_file_paths"] or []
        for n, rel in enumerate([annotated] if isinstance(annotated, str) else annotated):
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                f'def f():\n    # <paper2code name="part {n}">\n    return {n}\n    # </paper2code name="part {n}">\n'
            )
        for rel in [context] if isinstance(context, str) else context:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text("CONTEXT = 1\n")
        (folder / "paper2code_test.py").write_text("pass\n")
        (folder / "paper2code_paper.tex").write_text("\\title{stub}\n")

    release = services.release_create_from_pset(path=root, name="original-layout")
    assert release.entries.count() == 20 == Paper.objects.count()
    papers = list(Paper.objects.all())
    # One of the 20 links to OpenReview, not arXiv: it has no arXiv id, every other paper has one.
    assert all(bool(p.arxiv_id) == ("arxiv.org/abs/" in p.arxiv_abs) for p in papers)
    assert sum(bool(p.arxiv_id) for p in papers) == 19
    assert all(p.first_commit_date and p.arxiv_v1_date for p in papers)
    out = release_export(release=release, out_dir=tmp_path / "out")
    assert all_files(out) == pset_content(root)
    result = inspect(out)
    assert result.returncode == 0 and " 0 errors" in result.stdout, result.stdout + result.stderr
