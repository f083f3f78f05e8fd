"""Uploaded predictions: the one service behind the upload form and the upload API.

The file format and its parser belong to the core (``researchcodebench.predictions``, ``docs/predictions.md``);
this module adds what only the portal knows: the limits (settings ``RCB_UPLOAD_*``), the release the lines
must answer, and the model the run is for: an existing one the submitter may upload for
(``language_model_upload_check``), or a new one described by the submitter, created as theirs and marked
self-reported. ``predictions_upload`` checks all of it, the file's size before reading it, collects every problem (up to
the limit's ``max_errors``, each naming its line and field, offending values shortened) and creates nothing
unless everything is valid. Snippets of the release that the file does not cover are allowed: the run's
coverage shows them as missing.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction

from contributions.models import Release, Snippet
from evaluation.models import EvaluationRun, LanguageModel, PredictionsUpload
from evaluation.services import runs
from evaluation.services.estimates import release_run_defaults
from evaluation.services.language_models import (
    UploadNotAllowed,
    language_model_create,
    language_model_lookalike,
    language_model_upload_check,
    name_skeleton,
)
from researchcodebench.predictions import (
    Prediction,
    PredictionError,
    PredictionLimits,
    format_errors,
    parse_predictions,
    shown,
)

#: a model key: letters, digits, '.', '_' and '-', starting with a letter or digit (e.g. "GPT_4O", "o3-mini")
MODEL_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
#: ``LanguageModel.name``'s length
MODEL_NAME_MAX_CHARS = 200
#: an idempotency key: 1-128 visible ASCII characters (a UUID is the usual choice)
IDEMPOTENCY_KEY_RE = re.compile(r"^[\x21-\x7e]{1,128}$")
#: what an upload path stores once per idempotency key: a run, or a received upload
Row = TypeVar("Row", EvaluationRun, PredictionsUpload)


def upload_limits() -> PredictionLimits:
    """The limits of an upload, from the ``RCB_UPLOAD_*`` settings."""
    return PredictionLimits(
        max_bytes=int(settings.RCB_UPLOAD_MAX_BYTES),
        max_lines=int(settings.RCB_UPLOAD_MAX_LINES),
        max_code_bytes=int(settings.RCB_UPLOAD_MAX_CODE_BYTES),
        max_completions=int(settings.RCB_UPLOAD_MAX_COMPLETIONS),
    )


class UploadFile(Protocol):
    """What an upload needs of a file: its size (known before reading) and its bytes. Django's ``File``
    and ``UploadedFile`` (and ``ContentFile`` in tests) have both."""

    size: int | None

    def read(self, size: int = -1) -> bytes: ...


@dataclass(frozen=True)
class NewModel:
    """A model the submitter describes to create along with the run (checked by ``predictions_upload``)."""

    key: str
    name: str
    developer: str = ""


@dataclass(frozen=True)
class Upload:
    """The run an upload started, and whether it was started earlier by the same upload (``replayed``: a
    retry with the same idempotency key and the same file, which creates nothing)."""

    run: EvaluationRun
    replayed: bool = False


class IdempotencyKeyReused(Exception):
    """The idempotency key was already used by this submitter for a different upload (another file or
    release): nothing was created. ``run`` is the run the key belongs to, or ``upload`` the upload received
    with it that has no run (yet, or refused)."""

    def __init__(self, run: EvaluationRun | None = None, *, upload: PredictionsUpload | None = None) -> None:
        self.run, self.upload = run, upload
        what = f"run {run.pk}" if run is not None else f"upload {upload.pk if upload else '?'}"
        super().__init__(
            f"this idempotency key was already used for another upload ({what}); use a new key for a new file"
        )


class PredictionsInvalid(Exception):
    """The upload was rejected and nothing was created.

    ``field_errors`` maps ``"model"`` (the chosen model, which the submitter may not upload for),
    ``"model_key"``, ``"model_name"`` (the new model's fields) and ``"file"`` (a whole-file problem: too
    large, empty, too many lines) to messages; ``line_errors`` lists the file's
    line problems (``line N: message``, capped). ``errors`` is the file's problems, whole-file ones first.
    """

    def __init__(self, *, line_errors: list[str], field_errors: dict[str, list[str]]) -> None:
        self.line_errors = line_errors
        self.field_errors = {name: messages for name, messages in field_errors.items() if messages}
        every = [f"{name}: {m}" for name, messages in self.field_errors.items() for m in messages]
        super().__init__("; ".join([*every, *line_errors][:3]))

    @property
    def errors(self) -> list[str]:
        return [*self.field_errors.get("file", []), *self.line_errors]


#: the service's names of an upload's fields -> the API's (the form's are the service's own)
_API_FIELDS = {
    "model": "model",
    "model_key": "model",
    "model_name": "model_name",
    "idempotency_key": "Idempotency-Key",
}


def api_error_lines(exc: PredictionsInvalid) -> list[str]:
    """The upload's problems as the API says them: the model's and the key's as "field: message" in the API's
    names, then the file's (whole-file first, then by line)."""
    fields = [
        f"{_API_FIELDS[name]}: {message}"
        for name, messages in exc.field_errors.items()
        if name in _API_FIELDS
        for message in messages
    ]
    return [*fields, *exc.errors]


@dataclass
class ReleasePredictions:
    """A file checked against a release: valid predictions, every error, coverage of the release's snippets."""

    release: Release
    predictions: list[Prediction] = field(default_factory=list)
    #: problems of the whole file (too large, empty, too many lines): parsing stopped at them
    file_errors: list[str] = field(default_factory=list)
    #: ``line N: message`` in line order, capped at the limit's ``max_errors`` plus a count of the rest
    line_errors: list[str] = field(default_factory=list)
    #: (task key, snippet name) of every testable snippet of the release with no prediction at all
    missing: list[tuple[str, str]] = field(default_factory=list)
    total_snippets: int = 0

    @property
    def errors(self) -> list[str]:
        return [*self.file_errors, *self.line_errors]

    @property
    def ok(self) -> bool:
        return not self.errors and bool(self.predictions)

    @property
    def covered_snippets(self) -> int:
        return len({(p.task, p.snippet) for p in self.predictions})

    @property
    def n_completions(self) -> int:
        """Completions per snippet the file provides (highest index + 1)."""
        return max((p.completion_idx for p in self.predictions), default=-1) + 1

    @property
    def coverage(self) -> float:
        return self.covered_snippets / self.total_snippets if self.total_snippets else 0.0


def _release_snippets(release: Release) -> tuple[dict[str, set[str] | None], dict[str, list[str]]]:
    """Task key -> snippet names of the release (None for a task without files), and the names in
    document order per task."""
    tasks: dict[str, set[str] | None] = {}
    order: dict[str, list[str]] = {}
    for entry in release.entries.select_related("task", "task_version"):
        tasks[entry.task.key] = set() if entry.task_version.has_files else None
        order[entry.task.key] = []
    rows = (
        Snippet.objects.filter(task_version__release_entries__release=release, task_version__has_files=True)
        .order_by("task_version__task__key", "ordinal")
        .values_list("name", "task_version__task__key")
    )
    for name, task_key in rows:
        names = tasks.get(task_key)
        if names is not None:
            names.add(name)
            order[task_key].append(name)
    return tasks, order


def predictions_parse(*, data: bytes, release: Release) -> ReleasePredictions:
    """Check a predictions file against ``release``; never raises for bad input.

    The core parser's errors (``researchcodebench.predictions.parse_predictions`` with ``upload_limits()``)
    plus, per line, an unknown task, a task the release holds only as metadata (no files to test against)
    or an unknown snippet. Valid lines of a file with errors are still listed in ``predictions``.
    """
    limits = upload_limits()
    parsed = parse_predictions(data, limits=limits)
    tasks, order = _release_snippets(release)
    errors: list[PredictionError] = list(parsed.errors)
    predictions: list[Prediction] = []
    release_name = shown(release.name)
    for p in parsed.predictions:
        if p.task not in tasks:
            errors.append(PredictionError(p.line, f"unknown task {shown(p.task)} in release {release_name}"))
            continue
        names = tasks[p.task]
        if names is None:
            errors.append(
                PredictionError(
                    p.line,
                    f"task {shown(p.task)} in release {release_name} has no task files "
                    "(published metadata only), so it cannot be tested",
                )
            )
            continue
        if p.snippet not in names:
            errors.append(
                PredictionError(p.line, f"unknown snippet {shown(p.snippet)} in task {shown(p.task)}")
            )
            continue
        predictions.append(p)
    covered = {(p.task, p.snippet) for p in predictions}
    return ReleasePredictions(
        release=release,
        predictions=predictions,
        file_errors=[e.message for e in errors if e.line is None],
        line_errors=format_errors([e for e in errors if e.line is not None], limit=limits.max_errors),
        missing=[(t, s) for t, names in order.items() for s in names if (t, s) not in covered],
        total_snippets=sum(len(names) for names in order.values()),
    )


def _new_model_errors(new_model: NewModel) -> dict[str, list[str]]:
    """Problems of a new model's key and name: format, length, and a model that already has either."""
    problems: dict[str, list[str]] = {}
    key, name = new_model.key, new_model.name
    key_ok = False
    if not key:
        problems["model_key"] = ["give the new model's key"]
    elif not MODEL_KEY_RE.match(key):
        problems["model_key"] = [
            "use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. gpt-4.1)"
        ]
    elif LanguageModel.objects.filter(key=key).exists():
        problems["model_key"] = [f"a model with the key {shown(key)} exists: choose it instead"]
    else:
        key_ok = True
    if not name.strip():
        # The API creates a model when its key is unknown: say why a name is wanted.
        problems["model_name"] = [
            f"no model has the key {shown(key)}: give a display name to create it"
            if key_ok
            else "give the new model's display name"
        ]
    elif len(name) > MODEL_NAME_MAX_CHARS:
        problems["model_name"] = [f"use at most {MODEL_NAME_MAX_CHARS} characters (it has {len(name)})"]
    elif LanguageModel.objects.filter(name=name).exists():
        problems["model_name"] = [f"a model named {shown(name)} exists with another key"]
    if not problems:
        twin = language_model_lookalike(key=key, name=name)
        if twin is not None:
            field = (
                "model_key"
                if name_skeleton(key) in {name_skeleton(twin.key), name_skeleton(twin.name)}
                else "model_name"
            )
            problems[field] = [
                f"{shown(key if field == 'model_key' else name)} reads the same as the existing model "
                f"{shown(twin.name)} (key {shown(twin.key)}): letters that look alike, case and punctuation "
                "do not make a new model; choose that model, or a key and name of your own"
            ]
    return problems


def upload_create_once(
    *,
    key: str,
    earlier: Callable[[], Row | None],
    matches: Callable[[Row], bool],
    reused: Callable[[Row], IdempotencyKeyReused],
    create: Callable[[], Row],
) -> tuple[Row, bool]:
    """The idempotent part of both upload paths (``predictions_upload`` and
    ``received_uploads.predictions_upload_receive``): ``(row, replayed)``.

    With an idempotency ``key``, the row ``earlier()`` finds stored with it is the answer (``replayed``) when
    ``matches(row)`` (the same file for the same release), else ``reused(row)`` is raised; without one, or
    when none is stored, ``create()`` runs in a savepoint. Two requests racing with one key create one row
    (a unique constraint decides): the loser's ``IntegrityError`` gives the winner's row, replayed."""

    def replay() -> Row | None:
        row = earlier() if key else None
        if row is not None and not matches(row):
            raise reused(row)
        return row

    if (row := replay()) is not None:
        return row, True
    try:
        with transaction.atomic():
            return create(), False
    except IntegrityError:
        if (row := replay()) is None:
            raise
        return row, True


def idempotency_key_check(key: str) -> None:
    """``PredictionsInvalid`` naming the key when ``key`` is given and malformed."""
    if key and not IDEMPOTENCY_KEY_RE.match(key):
        raise PredictionsInvalid(
            line_errors=[],
            field_errors={"idempotency_key": ["must be 1 to 128 visible ASCII characters (a UUID, say)"]},
        )


def _upload_field_errors(
    *, key: str, model: LanguageModel | None, new_model: NewModel | None, requester: AbstractBaseUser
) -> dict[str, list[str]]:
    """The problems of an upload's fields besides the file: the chosen ``model`` (``requester`` may not
    upload for it) or the ``new_model``'s key and name. A malformed idempotency ``key`` raises
    ``PredictionsInvalid`` at once."""
    idempotency_key_check(key)
    field_errors = _new_model_errors(new_model) if new_model is not None else {}
    if model is not None:
        try:
            language_model_upload_check(model=model, user=requester)
        except UploadNotAllowed as exc:
            field_errors["model"] = [str(exc)]
    return field_errors


def upload_read(file: UploadFile, *, field_errors: dict[str, list[str]]) -> bytes:
    """The file's bytes, at most one past ``RCB_UPLOAD_MAX_BYTES``; a file whose stated size is over the
    limit raises ``PredictionsInvalid`` (with ``field_errors``) before anything is read."""
    limits = upload_limits()
    size_error = limits.size_error(file.size) if file.size is not None else None
    if size_error:
        raise PredictionsInvalid(line_errors=[], field_errors={**field_errors, "file": [size_error]})
    # At most one byte past the limit is read, so a file that did not tell its size is still bounded.
    return file.read(limits.max_bytes + 1)


def _upload_parse(*, data: bytes, release: Release, field_errors: dict[str, list[str]]) -> ReleasePredictions:
    """``data`` checked against ``release`` (``predictions_parse``); ``PredictionsInvalid`` with every
    problem, the file's and ``field_errors``, when there is any."""
    parsed = predictions_parse(data=data, release=release)
    if parsed.errors or field_errors:
        raise PredictionsInvalid(
            line_errors=parsed.line_errors, field_errors={**field_errors, "file": parsed.file_errors}
        )
    return parsed


def _uploaded_run_create(
    *,
    release: Release,
    parsed: ReleasePredictions,
    requester: AbstractBaseUser,
    model: LanguageModel | None,
    new_model: NewModel | None,
    template: str | None,
    with_paper: bool | None,
    key: str,
    sha256: str,
) -> EvaluationRun:
    """The uploaded run that tests ``parsed``'s predictions, for ``model`` or for ``new_model`` (created here,
    self-reported and owned by ``requester``); ``template`` and ``with_paper`` None take the release's
    defaults (``release_run_defaults``)."""
    defaults = release_run_defaults(release=release)
    if new_model is not None:
        model = language_model_create(
            key=new_model.key,
            name=new_model.name,
            developer=new_model.developer,
            management=LanguageModel.Management.SELF_REPORTED,
            owner=requester,
        )
    return runs.run_create(
        model=model,
        release=release,
        task_versions=list(release.task_versions.filter(has_files=True)),
        template=defaults.template if template is None else template,
        with_paper=defaults.with_paper if with_paper is None else with_paper,
        n_completions=parsed.n_completions,
        temperature=None,
        source=EvaluationRun.Source.UPLOADED,
        verification=EvaluationRun.Verification.UPLOADED,
        requester=requester,
        predictions=parsed.predictions,
        upload_key=key,
        upload_sha256=sha256,
    )


@transaction.atomic
def predictions_upload(
    *,
    release: Release,
    file: UploadFile,
    requester: AbstractBaseUser,
    template: str | None = None,
    with_paper: bool | None = None,
    model: LanguageModel | None = None,
    new_model: NewModel | None = None,
    idempotency_key: str = "",
) -> Upload:
    """Check an upload and start a run that tests its predictions; give ``model`` or ``new_model``.

    ``template`` (how code is extracted from a raw response) and ``with_paper`` (whether the paper was in
    the prompts that produced the answers) are stored on the run and decide the board it is ranked on;
    None takes the release's default (``release_run_defaults``).
    ``requester`` must be allowed to upload for ``model`` (``language_model_upload_check``); a
    ``new_model`` is created self-reported, owned by ``requester``. Raises ``PredictionsInvalid`` with
    every problem, of the model and of the file, when anything is wrong; then nothing is created (not the
    model either). A file over ``RCB_UPLOAD_MAX_BYTES`` is refused
    from its size, before it is read. The run has source and verification "uploaded"; its items are the
    file's lines, each answer turned into code exactly as ``python -m researchcodebench evaluate`` does
    (``researchcodebench.predictions.answer_code``, applied by ``run_create``).

    ``idempotency_key`` (optional) makes a retry safe: a client that lost the answer (a dropped connection,
    a web process killed while it stored the upload) sends the same file with the same key and gets the run
    the first attempt started (``Upload.replayed``), never a second one; the same key with another file or
    release raises ``IdempotencyKeyReused``. Keys are per submitter; two requests racing with one key
    create one run (a unique constraint decides).
    """
    if (model is None) == (new_model is None):
        raise ValueError("give exactly one of model and new_model")
    key = idempotency_key
    field_errors = _upload_field_errors(key=key, model=model, new_model=new_model, requester=requester)
    data = upload_read(file, field_errors=field_errors)
    sha256 = hashlib.sha256(data).hexdigest()
    run, replayed = upload_create_once(
        key=key,
        earlier=lambda: EvaluationRun.objects.filter(requester=requester, upload_key=key).first(),
        matches=lambda run: run.upload_sha256 == sha256 and run.release_id == release.pk,
        reused=IdempotencyKeyReused,
        create=lambda: _uploaded_run_create(
            release=release,
            parsed=_upload_parse(data=data, release=release, field_errors=field_errors),
            requester=requester,
            model=model,
            new_model=new_model,
            template=template,
            with_paper=with_paper,
            key=key,
            sha256=sha256,
        ),
    )
    return Upload(run=run, replayed=replayed)


def upload_temp_sweep(*, older_than_s: float | None = None) -> list[str]:
    """Delete the spooled upload files (``FILE_UPLOAD_TEMP_DIR``) not modified for ``older_than_s``
    (default ``RCB_UPLOAD_TMP_MAX_AGE_S``): a request in progress keeps writing its file, so only what a
    killed web process left behind is old. Returns the names deleted."""
    folder = Path(settings.FILE_UPLOAD_TEMP_DIR)
    limit = settings.RCB_UPLOAD_TMP_MAX_AGE_S if older_than_s is None else older_than_s
    cutoff = time.time() - limit
    deleted = []
    for path in folder.glob("*.upload*") if folder.is_dir() else ():
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_mtime <= cutoff:
                path.unlink()
                deleted.append(path.name)
        except FileNotFoundError:
            continue
    return deleted
