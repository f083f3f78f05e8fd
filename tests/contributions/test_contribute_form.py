"""The multi-step contribution form (/contribute/): each example task zipped and sent through every step ends
submitted with its files and declarations; drafts resume; each step puts errors on the field at fault;
the git path; htmx fragments; who may open a draft."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import time
import zipfile
from pathlib import Path

import git
import pytest
import yaml
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape

from contributions.models import FileBlob, Proposal, ProposalRevision
from contributions.services.proposal_validation import proposal_submit
from evaluation.services.validation import revision_validate
from researchcodebench import problems
from researchcodebench.pset import read_pset, read_registry_entries
from researchcodebench.runner import Runner, make_sandbox
from tests.factories import MaintainerFactory, PaperFactory, ProposalFactory, UserFactory

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pset"
EXAMPLE_IDS = sorted(read_registry_entries(EXAMPLES / "papers.yaml"))
ENTRIES = read_registry_entries(EXAMPLES / "papers.yaml")


def folder_files(task_id: str) -> dict[str, bytes]:
    root = EXAMPLES / task_id
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def zipped(files: dict[str, bytes], *, top: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for rel, data in files.items():
            archive.writestr(f"{top}/{rel}" if top else rel, data)
    return buffer.getvalue()


def upload(data: bytes, name: str = "task.zip") -> io.BytesIO:
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def paths(value) -> list[str]:
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


def meta_answers(task_id: str, **changes) -> dict[str, str]:
    """Step (a)'s answers for an example task, from its papers.yaml entry."""
    entry = ENTRIES[task_id]
    answers = {
        "task_key": f"{task_id}-contrib",
        "title": entry["title"],
        "arxiv": entry["arxiv_abs"],
        "arxiv_v1_date": entry.get("arxiv_v1_date") or "",
        "arxiv_date": entry.get("arxiv_date") or "",
        "venue": entry.get("venue") or "",
        "license": "MIT",
        "license_other": "",
        "github_url": entry.get("github_url") or "",
        "code_commit": "",
        "first_commit_date": "",
        "last_commit_date": "",
    }
    answers.update(changes)
    return answers


def example_manifest(task_id: str) -> dict:
    """What an author declares in step (c) for an example task (its papers.yaml entry and task.yaml)."""
    entry = ENTRIES[task_id]
    task_yaml = EXAMPLES / task_id / "task.yaml"
    declared = yaml.safe_load(task_yaml.read_text()) if task_yaml.is_file() else {}
    return {
        "annotated_files": paths(entry.get("annotated_file_paths")),
        "context_files": paths(entry.get("context_file_paths")),
        "oracle_files": list(declared.get("oracle_files") or []),
        "test_entry": declared.get("test_entry") or "paper2code_test.py",
        "paper_file": "paper2code_paper.md",
        "requirements_file": "",
        "needs_gpu": bool(declared.get("needs_gpu")),
    }


def files_answers(manifest: dict) -> dict:
    data = {key: value for key, value in manifest.items() if key != "needs_gpu"}
    if manifest["needs_gpu"]:
        data["needs_gpu"] = "on"
    return data


def step(proposal: Proposal | int, number: int) -> str:
    pk = proposal if isinstance(proposal, int) else proposal.pk
    names = {1: "meta", 2: "code", 3: "files", 4: "preview", 5: "submit"}
    return reverse(f"contributions:contribute_{names[number]}", kwargs={"proposal_id": pk})


@pytest.fixture
def author(client):
    user = UserFactory()
    client.force_login(user)
    return user


def start(client, task_id: str = "rmsnorm", **changes) -> Proposal:
    response = client.post(reverse("contributions:contribute_new"), meta_answers(task_id, **changes))
    assert response.status_code == 302, response.context["form"].errors if response.context else response
    proposal = Proposal.objects.get(task_key=changes.get("task_key", f"{task_id}-contrib"))
    assert response["Location"] == step(proposal, 2)
    return proposal


def upload_code(client, proposal: Proposal, task_id: str = "rmsnorm") -> ProposalRevision:
    response = client.post(step(proposal, 2), {"archive": upload(zipped(folder_files(task_id), top=task_id))})
    assert response.status_code == 302, response.context["form"].errors
    assert response["Location"] == step(proposal, 3)
    return proposal.revisions.get(submitted_at__isnull=True)


def through_files(client, proposal: Proposal, task_id: str = "rmsnorm") -> None:
    response = client.post(step(proposal, 3), files_answers(example_manifest(task_id)))
    assert response.status_code == 302, response.context["form"].errors
    assert response["Location"] == step(proposal, 4)


# ------------------------------------------------------------------------------------------- whole flow


@pytest.mark.parametrize("task_id", EXAMPLE_IDS)
def test_each_example_task_zipped_through_the_form_ends_submitted_with_its_files_and_manifest(
    client, author, task_id
):
    proposal = start(client, task_id)
    upload_code(client, proposal, task_id)

    page = client.get(step(proposal, 3))
    assert page.status_code == 200
    expected = example_manifest(task_id)
    # The annotated files were detected from the tags, and pre-checked.
    assert page.context["form"].initial["annotated_files"] == sorted(expected["annotated_files"])
    through_files(client, proposal, task_id)

    pset_task = read_pset(EXAMPLES).task(task_id)
    preview = client.get(step(proposal, 4))
    assert preview.status_code == 200
    names = [row.name for row in preview.context["preview"].rows]
    assert names == [s.name for s in pset_task.snippets]
    assert preview.context["preview"].errors == []
    html = preview.content.decode()
    assert all(escape(name) in html for name in names)
    assert f"{sum(s.lines for s in pset_task.snippets)} lines" in html.replace("line ", "lines ")

    # For a chosen snippet: the exact prompt the library renders for the original task folder.
    snippet = pset_task.snippets[-1]
    chosen = client.get(step(proposal, 4), {"snippet": snippet.name})
    assert chosen.status_code == 200
    prompt = problems.build_prompt(pset_task, snippet, template=problems.DEFAULT_TEMPLATE)
    assert chosen.context["problem"].prompt == prompt.text
    assert escape(prompt.text) in chosen.content.decode()
    assert chosen.context["problem"].masked == problems.mask_file(pset_task.read_text(snippet.file), snippet)

    assert client.post(step(proposal, 4))["Location"] == step(proposal, 5)
    summary = client.get(step(proposal, 5))
    assert summary.status_code == 200
    submitted = client.post(step(proposal, 5))
    assert submitted.status_code == 302

    proposal.refresh_from_db()
    assert proposal.state == Proposal.State.SUBMITTED
    assert proposal.title == ENTRIES[task_id]["title"]
    assert proposal.arxiv_id and proposal.arxiv_id in ENTRIES[task_id]["arxiv_abs"]
    assert proposal.meta["extra"]["license"] == "MIT"
    revision = proposal.revisions.get()
    assert revision.submitted_at is not None
    assert (revision.source, revision.origin) == ("archive", "task.zip")
    original = folder_files(task_id)
    assert revision.files == {rel: hashlib.sha256(data).hexdigest() for rel, data in original.items()}
    stored = dict(
        FileBlob.objects.filter(sha256__in=revision.files.values()).values_list("sha256", "content")
    )
    assert {rel: bytes(stored[sha]) for rel, sha in revision.files.items()} == original
    assert revision.manifest == {**expected, "annotated_files": expected["annotated_files"]}


#: the examples validated through the form: lora, the one whose snippets lie in two annotated files, and
#: rmsnorm. Every example's stored files and manifest are the original's byte for byte (the test above), and
#: tests/researchcodebench/test_validation.py validates each original, so validating all nine again here
#: (lion alone takes 20 s) would judge the same bytes twice.
VALIDATED_THROUGH_THE_FORM = ("lora", "rmsnorm")


@pytest.mark.slow
def test_examples_submitted_through_the_form_validate_green(client, author, settings):
    """The acceptance of the form: what it stores is a task the validation battery passes (the same
    battery the validation job runs, in the same sandbox, through the service the job calls)."""
    assert set(VALIDATED_THROUGH_THE_FORM) <= set(EXAMPLE_IDS)
    settings.RCB_VERDICT_CACHE = False
    durations = {}
    # The job's battery and sandbox, with two workers (a worker process's shared runner has one).
    with Runner(
        sandbox=make_sandbox("local"), environment=settings.RCB_EVAL_PYTHON or None, workers=2
    ) as runner:
        for task_id in VALIDATED_THROUGH_THE_FORM:
            proposal = start(client, task_id)
            upload_code(client, proposal, task_id)
            through_files(client, proposal, task_id)
            client.post(step(proposal, 4))
            assert client.post(step(proposal, 5)).status_code == 302
            revision = proposal.revisions.get()
            started = time.monotonic()
            outcome = revision_validate(revision_id=revision.pk, runner=runner)
            durations[task_id] = round(time.monotonic() - started, 1)
            revision.refresh_from_db()
            assert outcome == "passed", (task_id, revision.validation_report)
            proposal.refresh_from_db()
            assert proposal.state == Proposal.State.READY_FOR_REVIEW
    print("validation seconds per example task:", durations)


def test_the_submit_step_goes_to_the_proposal_page(client, author):
    proposal = start(client)
    upload_code(client, proposal)
    through_files(client, proposal)
    client.post(step(proposal, 4))
    response = client.post(step(proposal, 5))
    try:
        target = reverse("contributions:proposal_detail", kwargs={"proposal_id": proposal.pk})
    except NoReverseMatch:  # the proposal page is routed by another change; until then the list is the target
        target = reverse("contributions:contribute")
    assert response["Location"] == target


# ------------------------------------------------------------------------------------------------ drafts


def test_a_draft_is_listed_and_resumes_at_the_first_step_not_done(client, author):
    proposal = start(client)
    upload_code(client, proposal)

    listing = client.get(reverse("contributions:contribute"))
    assert listing.status_code == 200
    html = listing.content.decode()
    assert "rmsnorm-contrib" in html and f'href="{step(proposal, 3)}"' in html
    assert "Continue the draft" in html

    # The steps after it are closed until it is done: the author is sent back to it.
    assert client.get(step(proposal, 4))["Location"] == step(proposal, 3)
    assert client.get(step(proposal, 5))["Location"] == step(proposal, 3)

    # Coming back to step (a) shows the saved answers.
    form = client.get(step(proposal, 1)).context["form"]
    assert form.initial["title"] == ENTRIES["rmsnorm"]["title"]
    assert form.initial["arxiv"] == "1910.07467"


def test_changing_the_files_after_the_preview_asks_for_the_preview_again(client, author):
    proposal = start(client)
    upload_code(client, proposal)
    through_files(client, proposal)
    client.post(step(proposal, 4))
    assert client.get(step(proposal, 5)).status_code == 200
    manifest = {**example_manifest("rmsnorm"), "needs_gpu": True}
    assert client.post(step(proposal, 3), files_answers(manifest))["Location"] == step(proposal, 4)
    assert client.get(step(proposal, 5))["Location"] == step(proposal, 4)


def test_updating_the_metadata_keeps_the_draft_and_changes_the_key(client, author):
    proposal = start(client)
    response = client.post(step(proposal, 1), meta_answers("rmsnorm", task_key="rms-two", title="New title"))
    assert response["Location"] == step(proposal, 2)
    proposal.refresh_from_db()
    assert (proposal.task_key, proposal.title, proposal.step) == ("rms-two", "New title", 1)


def test_the_arxiv_id_fills_empty_fields_from_the_catalogue(client, author):
    PaperFactory(
        key="dyt",
        title="Transformers without Normalization",
        arxiv_id="2503.10622",
        venue="CVPR2025",
        arxiv_v1_date=dt.date(2025, 3, 13),
    )
    answers = meta_answers("rmsnorm", arxiv="https://arxiv.org/abs/2503.10622v2", title="", venue="")
    response = client.post(reverse("contributions:contribute_new"), {**answers, "action": "fill"})
    assert response.status_code == 200
    form = response.context["form"]
    assert form.initial["title"] == "Transformers without Normalization"
    assert form.initial["venue"] == "CVPR2025"
    assert form.initial["arxiv"] == "2503.10622"
    assert "Filled in from the catalogue" in response.content.decode()
    assert not Proposal.objects.exists()


# ------------------------------------------------------------------------------------------ field errors


def meta_errors(client, **changes) -> dict[str, list[str]]:
    response = client.post(reverse("contributions:contribute_new"), meta_answers("rmsnorm", **changes))
    assert response.status_code == 400
    return response.context["form"].errors


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"arxiv": "https://example.org/abs/1910.07467"}, "arxiv", "Not an arXiv id"),
        ({"code_commit": "xyz123", "github_url": "https://github.com/a/b"}, "code_commit", "hexadecimal"),
        ({"github_url": "http://github.com/a/b"}, "github_url", "https://"),
        ({"github_url": "git@github.com:a/b.git"}, "github_url", "https://"),
        ({"code_commit": "abcdef1", "github_url": ""}, "github_url", "repository the commit belongs to"),
        ({"arxiv_date": "2019-13-40"}, "arxiv_date", "Enter a real date"),
        ({"arxiv_date": "16/10/2019"}, "arxiv_date", "type it as 2024-07-01"),
        ({"arxiv_v1_date": "2020-01-01", "arxiv_date": "2019-10-16"}, "arxiv_date", "first version"),
        ({"first_commit_date": "2021-01-02", "last_commit_date": "2021-01-01"}, "last_commit_date", "first"),
        ({"first_commit_date": "2999-01-01"}, "first_commit_date", "future"),
        ({"license": "CC-BY-NC-4.0"}, "license", "valid choice"),
        ({"license": "other"}, "license_other", "license"),
        ({"title": "x" * 2_000_000}, "title", "at most 500"),
        (
            {"task_key": "no spaces allowed"},
            "task_key",
            "only letters, digits, hyphens (-) and underscores (_)",
        ),
        ({"task_key": "k" * 101}, "task_key", "at most 100"),
        ({"venue": "v" * 101}, "venue", "at most 100"),
    ],
)
def test_paper_step_puts_each_error_on_its_field(client, author, changes, field, message):
    errors = meta_errors(client, **changes)
    assert field in errors, errors
    assert message in " ".join(errors[field])
    assert not Proposal.objects.exists()


def test_a_task_key_used_by_another_open_proposal_is_an_error_on_the_key(client, author):
    ProposalFactory(task_key="rmsnorm-contrib")
    errors = meta_errors(client)
    assert errors["task_key"] == ["Another open proposal already uses 'rmsnorm-contrib'"]
    assert Proposal.objects.count() == 1


def code_errors(client, proposal: Proposal, data: dict) -> dict[str, list[str]]:
    response = client.post(step(proposal, 2), data)
    assert response.status_code == 400, response
    return response.context["form"].errors


def test_code_step_puts_each_error_on_its_field(client, author):
    proposal = start(client)
    archive = zipped(folder_files("rmsnorm"))
    assert "archive" in code_errors(client, proposal, {})
    both = code_errors(client, proposal, {"archive": upload(archive), "git_url": "https://github.com/a/b"})
    assert "not both" in both["archive"][0]
    assert "commit" in code_errors(client, proposal, {"git_url": "https://github.com/a/b"})["git_commit"][0]
    assert (
        "hexadecimal"
        in code_errors(client, proposal, {"git_url": "https://x.org/r", "git_commit": "zz"})["git_commit"][0]
    )
    assert "repository" in code_errors(client, proposal, {"git_commit": "abcdef1"})["git_url"][0]
    assert not proposal.revisions.exists()


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("task.zip", b"not a zip at all", "task.zip: the name says zip"),
        ("task.rar", zipped({"a.py": b"x"}), "not a .zip, .tar.gz"),
        ("slip.zip", zipped({"../evil.py": b"x", "model.py": b"y"}), "../evil.py"),
        ("bad.zip", zipped({"model.py": b"\xff\xfe\x00bad"}), "model.py: not UTF-8"),
        (
            "testonly.zip",
            zipped({"paper2code_test.py": b"import model\n"}),
            "no code besides its test script",
        ),
        (
            "notest.zip",
            zipped({"model.py": b'# <paper2code name="a">\nx = 1\n# </paper2code name="a">\n', "p.md": b""}),
            "no test script",
        ),
    ],
)
def test_a_refused_archive_shows_the_intake_message_on_the_archive_field(client, author, name, data, message):
    proposal = start(client)
    errors = code_errors(client, proposal, {"archive": upload(data, name)})
    assert message in errors["archive"][0], errors
    assert not proposal.revisions.exists()


def test_files_step_puts_each_error_on_its_field(client, author):
    proposal = start(client)
    upload_code(client, proposal, "roformer")
    good = example_manifest("roformer")

    def errors(**changes) -> dict[str, list[str]]:
        response = client.post(step(proposal, 3), files_answers({**good, **changes}))
        assert response.status_code == 400
        return response.context["form"].errors

    assert "at least one" in errors(annotated_files=[])["annotated_files"][0]
    assert "valid choice" in errors(annotated_files=["attention.py"])["annotated_files"][0]
    assert "valid choice" in errors(test_entry="nowhere.py")["test_entry"][0]
    assert "valid choice" in errors(paper_file="rope.py")["paper_file"][0]
    assert "paper" in errors(paper_file="")["paper_file"][0]
    assert "cannot be hidden" in errors(oracle_files=["attention.py"])["oracle_files"][0]
    assert "valid choice" in errors(context_files=["../x.py"])["context_files"][0]
    revision = proposal.revisions.get()
    assert revision.manifest["context_files"] == []  # nothing refused was stored


# ----------------------------------------------------------------------------------------------- git path


def commit_example(tmp_path: Path, task_id: str = "rmsnorm") -> tuple[Path, str]:
    path = tmp_path / "source"
    repo = git.Repo.init(path)
    for rel, data in folder_files(task_id).items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    repo.git.add("--all")
    actor = git.Actor("Fixture", "fixture@example.invalid")
    sha = repo.index.commit("task", author=actor, committer=actor).hexsha
    return path, sha


def test_code_from_a_local_git_repository_becomes_the_revision(client, author, tmp_path, settings):
    settings.RCB_INTAKE_ALLOW_FILE_URLS = True
    path, sha = commit_example(tmp_path)
    proposal = start(client)
    response = client.post(step(proposal, 2), {"git_url": f"file://{path}", "git_commit": sha})
    assert response.status_code == 302, response.context["form"].errors
    revision = proposal.revisions.get()
    assert (revision.source, revision.origin, revision.commit) == ("git", f"file://{path}", sha)
    assert set(revision.files) == set(folder_files("rmsnorm"))
    # The guess read the upload's own task.yaml: the oracle file is declared already.
    assert revision.manifest["oracle_files"] == ["rmsnorm_ref.py"]
    # Coming back to the step shows the repository and commit given.
    form = client.get(step(proposal, 2)).context["form"]
    assert (form.initial["git_url"], form.initial["git_commit"]) == (f"file://{path}", sha)


def test_git_urls_the_settings_do_not_allow_are_errors_on_the_url(client, author, tmp_path, settings):
    settings.RCB_INTAKE_ALLOW_FILE_URLS = False
    path, sha = commit_example(tmp_path)
    proposal = start(client)
    assert "git_url" in code_errors(client, proposal, {"git_url": f"file://{path}", "git_commit": sha})
    refused = code_errors(client, proposal, {"git_url": "ext::sh -c touch% /tmp/pwned", "git_commit": sha})
    assert "git_url" in refused
    assert "git_url" in code_errors(client, proposal, {"git_url": "--upload-pack=touch", "git_commit": sha})
    assert not proposal.revisions.exists()


def test_a_commit_missing_from_the_repository_is_an_error_on_the_commit(client, author, tmp_path, settings):
    settings.RCB_INTAKE_ALLOW_FILE_URLS = True
    path, _sha = commit_example(tmp_path)
    proposal = start(client)
    errors = code_errors(client, proposal, {"git_url": f"file://{path}", "git_commit": "0123456789" * 4})
    assert "not found" in errors["git_commit"][0]


# ------------------------------------------------------------------------------------------------- htmx


def test_htmx_gets_fragments_and_is_sent_to_the_next_step(client, author):
    htmx = {"HTTP_HX_REQUEST": "true"}
    page = client.get(reverse("contributions:contribute_new"), **htmx)
    html = page.content.decode()
    assert page.status_code == 200 and "<html" not in html and 'id="contribute-step"' in html

    invalid = client.post(
        reverse("contributions:contribute_new"), meta_answers("rmsnorm", arxiv="nope"), **htmx
    )
    assert invalid.status_code == 200  # htmx swaps only 2xx answers
    assert "Not an arXiv id" in invalid.content.decode() and "<html" not in invalid.content.decode()

    done = client.post(reverse("contributions:contribute_new"), meta_answers("rmsnorm"), **htmx)
    proposal = Proposal.objects.get()
    assert done.status_code == 200
    assert f'"path": "{step(proposal, 2)}"' in done["HX-Location"]

    upload_code(client, proposal)
    through_files(client, proposal)
    problem = client.get(step(proposal, 4), {"snippet": "rmsnorm forward"}, **htmx)
    assert problem.status_code == 200
    fragment = problem.content.decode()
    assert "What a model sees" in fragment and 'id="contribute-step"' not in fragment
    unknown = client.get(step(proposal, 4), {"snippet": "nope"}, **htmx)
    assert "has no snippet" in unknown.content.decode()


def test_no_step_page_has_an_inline_script_or_event_handler(client, author):
    proposal = start(client)
    upload_code(client, proposal)
    through_files(client, proposal)
    client.post(step(proposal, 4))
    for number in range(1, 6):
        html = client.get(step(proposal, number)).content.decode()
        assert "<script>" not in html and "<script " not in html.replace('<script src="/static/', "")
        assert " onclick=" not in html and " onchange=" not in html and " onsubmit=" not in html


# ------------------------------------------------------------------------------------------------ access


def test_anonymous_visitors_are_sent_to_sign_in(client):
    listing = client.get(reverse("contributions:contribute"))
    assert listing.status_code == 200 and "Sign in" in listing.content.decode()
    proposal = ProposalFactory()
    for url in [reverse("contributions:contribute_new"), *(step(proposal, n) for n in range(1, 6))]:
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("account_login") + "?next=")
    assert client.post(reverse("contributions:contribute_new"), meta_answers("rmsnorm")).status_code == 302
    assert Proposal.objects.count() == 1


def test_another_user_cannot_open_or_change_someone_elses_draft(client):
    proposal = ProposalFactory()
    for other in (UserFactory(), MaintainerFactory()):
        client.force_login(other)
        for number in range(1, 6):
            assert client.get(step(proposal, number)).status_code == 404
        assert client.post(step(proposal, 1), meta_answers("rmsnorm")).status_code == 404
        assert (
            client.post(step(proposal, 2), {"archive": upload(zipped(folder_files("rmsnorm")))}).status_code
            == 404
        )
        assert client.get(step(10**8, 1)).status_code == 404
    proposal.refresh_from_db()
    assert proposal.title.startswith("Paper of") and not proposal.revisions.exists()


def test_a_submitted_proposal_can_no_longer_be_changed_through_the_form(client, author):
    proposal = start(client)
    upload_code(client, proposal)
    through_files(client, proposal)
    proposal_submit(proposal=proposal, by=author)
    for number in range(1, 6):
        response = client.get(step(proposal, number))
        assert response.status_code == 302 and "/step/" not in response["Location"]
    response = client.post(step(proposal, 2), {"archive": upload(zipped(folder_files("rmsnorm")))})
    assert response.status_code == 302
    assert proposal.revisions.count() == 1
