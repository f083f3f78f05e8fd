"""Reading and writing original-format psets (docs/task-format.md), on a hostile fixture and broken inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from researchcodebench.pset import (
    PaperMeta,
    Pset,
    PsetError,
    Task,
    TaskManifest,
    content_hash,
    read_pset,
    read_registry_entries,
    write_pset,
)

HOSTILE = Path(__file__).parent / "fixtures" / "hostile_pset"
SHARED_REGISTRY = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "papers.yaml"


def _codes(pset: Pset) -> list[str]:
    return [issue.code for _, issue in pset.all_issues()]


def _copy_hostile(tmp_path: Path) -> Path:
    dest = tmp_path / "pset"
    shutil.copytree(HOSTILE, dest)
    return dest


def test_reads_hostile_original_format_pset_without_errors() -> None:
    pset = read_pset(HOSTILE)
    assert [t.id for t in pset.tasks] == ["attn: v2, final=yes", "crlf tabs", "md_task"]
    assert [i for _, i in pset.all_issues() if i.is_error] == []
    assert _codes(pset) == ["inline_tag"]  # the tag text inside a string constant of norm.py
    assert sum(len(t.snippets) for t in pset.tasks) == 11
    assert sum(s.lines for t in pset.tasks for s in t.snippets) == 28


def test_hostile_metadata_dates_paths_and_paper_files() -> None:
    pset = read_pset(HOSTILE)
    attn = pset.task("attn: v2, final=yes")
    assert attn.meta.arxiv_date == "2025-02-06" and attn.meta.arxiv_v1_date == "2024-06-20"
    assert attn.meta.last_commit_date is None
    assert attn.meta.annotated_file_paths == ("deep/a b/c,d/e=f/model core.py",)
    assert attn.meta.context_file_paths == ()
    assert attn.paper_file == "paper2code_paper.tex"
    assert max(s.depth for s in attn.snippets) == 3
    crlf = pset.task("crlf tabs")
    assert crlf.meta.first_commit_date == "2024-12-24"
    assert crlf.meta.annotated_file_paths == ("loss.py", "lib/tabbed.py")
    assert crlf.meta.context_file_paths == ("helpers/util.py",)
    assert [(s.name, s.file, s.indent) for s in crlf.snippets] == [
        ("hinge", "loss.py", 4),
        ("clip low", "lib/tabbed.py", 1),
        ("clip high", "lib/tabbed.py", 1),
    ]
    md = pset.task("md_task")
    assert md.paper_file == "paper2code_paper.md"
    assert md.meta.context_file_paths == ("configs/defaults.py", "norm_ref.py")
    assert md.manifest == TaskManifest()
    assert md.manifest.oracles(["norm.py", "norm_ref.py", "x/y_ref.py"]) == ("norm_ref.py", "x/y_ref.py")


def test_task_and_pset_round_trip_through_json() -> None:
    pset = read_pset(HOSTILE)
    again = Pset.from_dict(json.loads(json.dumps(pset.to_dict())))
    assert again == pset
    assert Task.from_dict(pset.tasks[0].to_dict()) == pset.tasks[0]


def test_snippet_lookup_error_names_task_and_choices() -> None:
    task = read_pset(HOSTILE).task("md_task")
    with pytest.raises(KeyError, match="has no snippet 'nope'.*'scale'"):
        task.snippet("nope")


def test_write_pset_round_trips_registry_and_copies_bytes(tmp_path: Path) -> None:
    pset = read_pset(HOSTILE)
    out = tmp_path / "out"
    write_pset(pset, out)
    again = read_pset(out)
    assert [t.meta for t in again.tasks] == [t.meta for t in pset.tasks]
    assert [t.snippets for t in again.tasks] == [t.snippets for t in pset.tasks]
    for task in pset.tasks:
        assert content_hash(out / task.id) == content_hash(task.root)
    crlf = (out / "crlf tabs" / "loss.py").read_bytes()
    assert crlf == (HOSTILE / "crlf tabs" / "loss.py").read_bytes() and b"\r\n" in crlf
    text = (out / "papers.yaml").read_text()
    assert "  first_commit_date: 2024-12-24\n" in text  # unquoted: a YAML date, as the original wrote
    assert '- id: "attn: v2, final=yes"' in text
    assert "  context_file_paths: null" in text


def test_write_pset_writes_task_yaml_for_non_default_manifest(tmp_path: Path) -> None:
    task = read_pset(HOSTILE).task("md_task")
    manifest = TaskManifest(requirements=("numpy",), needs_gpu=True, timeout_s=5.0, oracle_files=("n.py",))
    write_pset([Task(**{**task.__dict__, "manifest": manifest})], tmp_path / "o")
    assert read_pset(tmp_path / "o").task("md_task").manifest == manifest


def test_write_pset_refuses_non_empty_output(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    with pytest.raises(PsetError, match="not empty"):
        write_pset(read_pset(HOSTILE), tmp_path)


def test_content_hash_changes_with_content_and_ignores_caches(tmp_path: Path) -> None:
    root = _copy_hostile(tmp_path) / "md_task"
    before = content_hash(root)
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "norm.cpython-312.pyc").write_bytes(b"junk")
    assert content_hash(root) == before
    (root / "norm.py").write_text((root / "norm.py").read_text() + "\n")
    assert content_hash(root) != before


def test_missing_registry_and_folder_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(PsetError, match="not a folder"):
        read_pset(tmp_path / "nope")
    with pytest.raises(PsetError, match="papers.yaml: missing"):
        read_pset(tmp_path)


def test_bad_yaml_reports_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "papers.yaml").write_text("- id: a\n  title: [unclosed\n- id: b\n")
    with pytest.raises(PsetError, match=r"papers.yaml:\d+: invalid YAML"):
        read_pset(tmp_path)


def test_a_registry_file_alone_reads_as_entries_by_id_with_dates_as_text(tmp_path: Path) -> None:
    registry = tmp_path / "papers.yaml"
    registry.write_text(
        "- id: a\n  first_commit_date: 2024-13-45\n- id: b\n  first_commit_date: 2025-01-02\n"
    )
    entries = read_registry_entries(registry)
    assert list(entries) == ["a", "b"]
    # Left as text: the impossible date reaches normalise_date, which names the entry and field.
    assert entries["a"]["first_commit_date"] == "2024-13-45"
    assert entries["b"]["first_commit_date"] == "2025-01-02"


def test_a_registry_file_alone_reports_bad_input_with_file_and_line(tmp_path: Path) -> None:
    registry = tmp_path / "papers.yaml"
    registry.write_text("- id: a\n  title: [unclosed\n")
    with pytest.raises(PsetError, match=r"papers.yaml:\d+: invalid YAML"):
        read_registry_entries(registry)
    registry.write_text("- title: no id\n")
    with pytest.raises(PsetError, match="entry 1: expected a mapping with an 'id'"):
        read_registry_entries(registry)
    registry.write_text("id: a\n")
    with pytest.raises(PsetError, match="expected a YAML list"):
        read_registry_entries(registry)
    with pytest.raises(PsetError, match="cannot be read"):
        read_registry_entries(tmp_path / "absent.yaml")


def test_registry_that_is_not_a_list_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "papers.yaml").write_text("id: a\n")
    with pytest.raises(PsetError, match="must be a YAML list"):
        read_pset(tmp_path)


def test_hostile_registry_entries_become_issues_not_tracebacks(tmp_path: Path) -> None:
    root = _copy_hostile(tmp_path)
    registry = (root / "papers.yaml").read_text()
    registry += (
        "\n- id: md_task\n  annotated_file_paths: norm.py\n"
        "- id: ghost\n  annotated_file_paths: a.py\n"
        "- just a string\n"
        "- id: ../escape\n  annotated_file_paths: a.py\n"
        "- id: md_task_copy\n  annotated_file_paths: [missing.py, ../../etc/passwd]\n"
        "  context_file_paths: nope.py\n  first_commit_date: yesterday\n"
    )
    (root / "papers.yaml").write_text(registry)
    shutil.copytree(root / "md_task", root / "md_task_copy")
    pset = read_pset(root)
    codes = _codes(pset)
    for code in (
        "duplicate_id",
        "missing_folder",
        "bad_entry",
        "bad_id",
        "missing_file",
        "bad_path",
        "bad_date",
    ):
        assert code in codes, code
    messages = "\n".join(str(i) for _, i in pset.all_issues())
    assert "papers.yaml:45: error: duplicate task id 'md_task' (first on line 31)" in messages
    assert "annotated file 'missing.py' does not exist" in messages
    assert "context file 'nope.py' does not exist" in messages
    assert [t.id for t in pset.tasks] == ["attn: v2, final=yes", "crlf tabs", "md_task", "md_task_copy"]


def test_task_manifest_is_validated(tmp_path: Path) -> None:
    root = _copy_hostile(tmp_path)
    (root / "md_task" / "task.yaml").write_text(
        "needs_gpu: maybe\ntimeout_s: -1\ncolour: red\ntest_entry: run.py\n"
    )
    task = read_pset(root).task("md_task")
    messages = [i.message for i in task.issues if i.code == "bad_manifest"]
    assert any("needs_gpu" in m for m in messages)
    assert any("timeout_s" in m for m in messages)
    assert any("unknown key 'colour'" in m for m in messages)
    assert any(i.code == "missing_test" and i.file == "run.py" for i in task.issues)


def test_task_without_paper_warns_and_annotation_errors_carry_file_and_line(tmp_path: Path) -> None:
    root = _copy_hostile(tmp_path)
    (root / "md_task" / "paper2code_paper.md").unlink()
    (root / "md_task" / "norm.py").write_text('# <paper2code name="scale">\nx = 1\n')
    task = read_pset(root).task("md_task")
    assert ("missing_paper", "warning") in [(i.code, i.severity) for i in task.issues]
    assert ("norm.py", 1, "unclosed") in [(i.file, i.line, i.code) for i in task.issues]


def test_duplicate_snippet_names_across_files_of_a_task(tmp_path: Path) -> None:
    root = _copy_hostile(tmp_path)
    tabbed = root / "crlf tabs" / "lib" / "tabbed.py"
    tabbed.write_bytes(tabbed.read_bytes().replace(b"clip high", b"hinge"))
    task = read_pset(root).task("crlf tabs")
    dupes = [i for i in task.issues if i.code == "duplicate_name"]
    assert [(i.file, i.line) for i in dupes] == [("lib/tabbed.py", 6)]
    assert "loss.py:6" in dupes[0].message


def test_paper_meta_round_trips_extra_keys() -> None:
    meta = PaperMeta(id="x", annotated_file_paths=("a.py",), extra=(("notes", "kept"),))
    assert PaperMeta.from_dict(json.loads(json.dumps(meta.to_dict()))) == meta


def test_reads_the_published_registry_metadata(tmp_path: Path) -> None:
    if not SHARED_REGISTRY.is_file():
        pytest.skip(f"{SHARED_REGISTRY} not present")
    shutil.copy(SHARED_REGISTRY, tmp_path / "papers.yaml")
    pset = read_pset(tmp_path)
    # No task folders here: every entry must parse and report only its missing folder.
    assert set(_codes(pset)) == {"missing_folder"}
    assert len(pset.issues) == 20
