"""Forms of the contribution form's steps (``contributions.views.contribute``): (a) paper metadata, (b) code,
(c) files.

Each form checks what it can on its own (types, bounds, consistency between its fields); the services of
``contributions.services`` (``proposals``, ``revisions``) decide the rest (a task key already taken, files of
the upload) and their ``ProposalError.field`` puts the message on the field at fault. Every text field is
bounded, so a huge value is a field error, never a crash or a huge row.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django import forms
from django.core.validators import URLValidator

from contributions.selectors.contribute import FileChoices
from contributions.upload_manifest import MANIFEST_DEFAULTS
from researchcodebench.arxiv import arxiv_id

#: Licenses whose terms allow the benchmark to redistribute the code (SPDX ids), and "other" with its text.
LICENSES: tuple[tuple[str, str], ...] = (
    ("MIT", "MIT"),
    ("Apache-2.0", "Apache License 2.0"),
    ("BSD-2-Clause", "BSD 2-Clause"),
    ("BSD-3-Clause", "BSD 3-Clause"),
    ("ISC", "ISC"),
    ("MPL-2.0", "Mozilla Public License 2.0"),
    ("LGPL-2.1-only", "GNU LGPL 2.1"),
    ("LGPL-3.0-only", "GNU LGPL 3.0"),
    ("GPL-2.0-only", "GNU GPL 2.0"),
    ("GPL-3.0-only", "GNU GPL 3.0"),
    ("AGPL-3.0-only", "GNU AGPL 3.0"),
    ("BSL-1.0", "Boost Software License 1.0"),
    ("Zlib", "zlib"),
    ("Unlicense", "The Unlicense"),
    ("CC0-1.0", "CC0 1.0"),
    ("CC-BY-4.0", "CC BY 4.0"),
    ("CC-BY-SA-4.0", "CC BY-SA 4.0"),
    ("other", "Other (give its text)"),
)
LICENSE_IDS = frozenset(value for value, _ in LICENSES)

COMMIT_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")
ISO_DATE = ["%Y-%m-%d"]


class CommitField(forms.CharField):
    """A git commit: 7 to 40 hexadecimal digits, lower-cased ("" when left empty and not required)."""

    def clean(self, value: Any) -> str:
        # After CharField's own checks, so an over-long value gets only its length error.
        value = super().clean(value)
        if value and not COMMIT_RE.match(value):
            raise forms.ValidationError("A commit is 7 to 40 hexadecimal digits.")
        return value.lower()


def _date_field(label: str, help_text: str = "") -> forms.DateField:
    return forms.DateField(
        label=label,
        required=False,
        input_formats=ISO_DATE,
        # The browser's date input shows its own format (e.g. mm/dd/yyyy) and sends year-month-day: a
        # format hint would contradict what the person sees.
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        help_text=help_text,
        error_messages={"invalid": "Enter a real date: pick it from the calendar, or type it as 2024-07-01."},
    )


class PaperMetaForm(forms.Form):
    """Step (a): the paper and where its code comes from (a ``papers.yaml`` entry plus license and commit).

    ``warnings`` lists what is allowed but worth a second look (shown, not blocking).
    """

    task_key = forms.SlugField(
        label="Task key",
        max_length=100,
        help_text="The id the task is published under (letters, digits, '-' and '_'), e.g. dyt.",
        error_messages={
            "invalid": "A task key may hold only letters, digits, hyphens (-) and underscores (_), without spaces."
        },
    )
    title = forms.CharField(label="Paper title", max_length=500)
    arxiv = forms.CharField(
        label="arXiv id or URL",
        max_length=200,
        required=False,
        help_text="e.g. 2502.10927 or https://arxiv.org/abs/2502.10927",
    )
    arxiv_v1_date = _date_field("Date of the first arXiv version")
    arxiv_date = _date_field("Date of the arXiv version the task follows")
    venue = forms.CharField(label="Venue", max_length=100, required=False, help_text="e.g. ICLR2025")
    license = forms.ChoiceField(label="License of the code", choices=(("", "Choose a license"), *LICENSES))
    license_other = forms.CharField(
        label="License text or name (for Other)", max_length=5000, required=False, widget=forms.Textarea
    )
    github_url = forms.CharField(
        label="Code repository",
        max_length=500,
        required=False,
        validators=[URLValidator(schemes=["https"], message="Enter an https:// URL of the code repository.")],
        help_text="https:// URL of the paper's official code",
    )
    code_commit = CommitField(
        label="Commit the code was taken from",
        max_length=40,
        required=False,
        help_text="7 to 40 hexadecimal digits",
    )
    first_commit_date = _date_field("Date of the repository's first commit")
    last_commit_date = _date_field("Date of the repository's last commit")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.warnings: list[str] = []

    def clean_arxiv(self) -> str:
        value = self.cleaned_data["arxiv"].strip()
        if value and not arxiv_id(value):
            raise forms.ValidationError(
                "Not an arXiv id or arxiv.org URL (e.g. 2502.10927 or https://arxiv.org/abs/2502.10927)."
            )
        return arxiv_id(value)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        today = dt.date.today()
        for name in ("arxiv_v1_date", "arxiv_date", "first_commit_date", "last_commit_date"):
            value = data.get(name)
            if value and value > today:
                self.add_error(name, f"{value.isoformat()} is in the future.")
        v1, latest = data.get("arxiv_v1_date"), data.get("arxiv_date")
        if v1 and latest and latest < v1:
            self.add_error("arxiv_date", f"The version followed cannot predate the first version ({v1}).")
        first, last = data.get("first_commit_date"), data.get("last_commit_date")
        if first and last and last < first:
            self.add_error("last_commit_date", f"The last commit cannot predate the first commit ({first}).")
        if data.get("license") == "other" and not (data.get("license_other") or "").strip():
            self.add_error("license_other", "Give the license's name or text.")
        if data.get("code_commit") and not data.get("github_url"):
            self.add_error("github_url", "Give the repository the commit belongs to.")
        paper_date = v1 or latest
        if first and paper_date and first > paper_date + dt.timedelta(days=365):
            self.warnings.append(
                f"The first commit ({first}) is more than a year after the paper ({paper_date}): "
                "check the dates, the contamination rules use them."
            )
        return data

    def meta(self) -> dict[str, Any]:
        """The registry entry (``contributions.task_meta`` JSON form) of the cleaned data; license and the
        code's commit are kept as extra keys, as ``papers.yaml`` keeps unknown keys."""
        data = self.cleaned_data
        ident = data["arxiv"]
        extra = {"license": data["license"], "code_commit": data["code_commit"] or None}
        if data["license"] == "other":
            extra["license_text"] = data["license_other"].strip()
        return {
            "title": data["title"].strip(),
            "arxiv_abs": f"https://arxiv.org/abs/{ident}" if ident else None,
            "arxiv_v1_date": _iso(data.get("arxiv_v1_date")),
            "arxiv_date": _iso(data.get("arxiv_date")),
            "venue": data["venue"].strip() or None,
            "github_url": data["github_url"].strip() or None,
            "first_commit_date": _iso(data.get("first_commit_date")),
            "last_commit_date": _iso(data.get("last_commit_date")),
            "extra": extra,
        }

    def draft(self) -> dict[str, Any]:
        """The answers as JSON (dates as ISO text), stored with the draft and given back as ``initial``."""
        return {
            name: value.isoformat() if isinstance(value, dt.date) else value
            for name, value in self.cleaned_data.items()
        }


def _iso(value: dt.date | None) -> str | None:
    return value.isoformat() if value else None


def meta_initial(*, task_key: str, meta: dict[str, Any]) -> dict[str, Any]:
    """Step (a)'s initial values from a stored registry entry (a draft saved before the form had them)."""
    extra = meta.get("extra") or {}
    license_id = str(extra.get("license") or "")
    return {
        "task_key": task_key,
        "title": meta.get("title") or "",
        "arxiv": arxiv_id(str(meta.get("arxiv_abs") or "")),
        "arxiv_v1_date": meta.get("arxiv_v1_date") or "",
        "arxiv_date": meta.get("arxiv_date") or "",
        "venue": meta.get("venue") or "",
        "license": license_id if license_id in LICENSE_IDS else "",
        "license_other": extra.get("license_text") or "",
        "github_url": meta.get("github_url") or "",
        "code_commit": extra.get("code_commit") or "",
        "first_commit_date": meta.get("first_commit_date") or "",
        "last_commit_date": meta.get("last_commit_date") or "",
    }


class CodeForm(forms.Form):
    """Step (b): an archive upload, or a git repository URL and a commit (exactly one of the two)."""

    archive = forms.FileField(
        label="Archive (.zip or .tar.gz)",
        required=False,
        help_text="The task folder: annotated code, the test, the paper text.",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,.tar.gz,.tgz,.tar"}),
    )
    git_url = forms.CharField(
        label="Git repository URL",
        max_length=2000,
        required=False,
        help_text="https:// URL of a public repository whose root is the task folder",
    )
    git_commit = CommitField(
        label="Commit", max_length=64, required=False, help_text="The commit to take (7 to 40 hex digits)"
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        archive = data.get("archive")
        url = (data.get("git_url") or "").strip()
        commit = data.get("git_commit")
        if "git_commit" in self.errors:
            return data
        if archive and (url or commit):
            self.add_error("archive", "Upload an archive or give a git repository, not both.")
        elif not archive and not url and not commit:
            self.add_error("archive", "Upload an archive, or give a git repository URL and a commit.")
        elif not archive and url and not commit:
            self.add_error("git_commit", "Give the commit to take from the repository.")
        elif not archive and commit and not url:
            self.add_error("git_url", "Give the repository the commit belongs to.")
        data["git_url"] = url
        return data


def _choices(paths: list[str]) -> list[tuple[str, str]]:
    return [(p, p) for p in paths]


class FilesForm(forms.Form):
    """Step (c): the declarations about an upload's files; the choices come from the upload itself."""

    annotated_files = forms.MultipleChoiceField(
        label="Annotated files",
        widget=forms.CheckboxSelectMultiple,
        help_text="Files holding paper2code tags: their tagged regions are the problems.",
        error_messages={"required": "Choose at least one annotated file."},
    )
    context_files = forms.MultipleChoiceField(
        label="Context files",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Shown to models in full, as context.",
    )
    oracle_files = forms.MultipleChoiceField(
        label="Oracle files",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Reference files the test compares against: hidden from models.",
    )
    test_entry = forms.ChoiceField(label="Test entry point", help_text="The script that runs the test.")
    paper_file = forms.ChoiceField(
        label="Paper text",
        help_text="LaTeX (.tex) or Markdown (.md): models are given it.",
        error_messages={"required": "Choose the paper's text (.tex or .md); upload one with the code."},
    )
    requirements_file = forms.ChoiceField(label="Requirements", required=False)
    needs_gpu = forms.BooleanField(label="The test needs a GPU", required=False)

    def __init__(self, *args: Any, choices: FileChoices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        fields = self.fields
        fields["annotated_files"].choices = _choices(choices.annotated)
        fields["context_files"].choices = _choices(choices.context)
        fields["oracle_files"].choices = _choices(choices.oracle)
        fields["test_entry"].choices = _choices(choices.tests)
        fields["paper_file"].choices = [("", "Choose the paper file"), *_choices(choices.papers)]
        fields["requirements_file"].choices = [("", "None"), *_choices(choices.requirements)]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        annotated = set(data.get("annotated_files") or ())
        context = set(data.get("context_files") or ())
        both = sorted(annotated & context)
        if both:
            self.add_error("context_files", f"{', '.join(both)}: a file is annotated or context, not both.")
        clash = sorted(set(data.get("oracle_files") or ()) & (annotated | context))
        if clash:
            self.add_error("oracle_files", f"{', '.join(clash)}: shown to models, so it cannot be hidden.")
        return data

    def manifest(self) -> dict[str, Any]:
        """The declarations in ``ProposalRevision.manifest`` form."""
        data = self.cleaned_data
        return {
            key: data.get(key, default) if data.get(key) is not None else default
            for key, default in MANIFEST_DEFAULTS.items()
        }


#: what a person calls the answers a proposal service may name (``ProposalError.field``) that no single field
#: of the contribution form holds
_ANSWER_LABELS = {"code": "Code", "meta": "Paper details", "manifest": "Files", "marks": "Snippets"}


def contribution_label(field: str | None) -> str | None:
    """The label of the contribution form's answer ``field`` (a ``ProposalError.field``), for a refusal shown
    away from that field; None for no field or one a person never answers."""
    for form in (PaperMetaForm, CodeForm, FilesForm):
        if field in form.base_fields:
            return str(form.base_fields[field].label)
    return _ANSWER_LABELS.get(field or "")
