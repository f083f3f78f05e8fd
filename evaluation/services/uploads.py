"""Uploaded predictions: parse and validate the CLI's predictions JSONL, then start a run that tests them.

The file holds one JSON object per line::

    {"task": "DyT", "snippet": "forward", "completion_idx": 0, "code": "return x * 2"}
    {"task": "DyT", "snippet": "init", "completion_idx": 0, "response": "```python\\n...\\n```"}

``code`` is the answer as it goes into the masked file; ``response`` is a raw model answer from which the run
extracts the code with the run's template. ``completion_idx`` defaults to 0. Blank lines are ignored. Snippets
of the release that the file does not cover are allowed: the run's coverage shows them as missing.

Validation collects every problem (up to ``MAX_REPORTED_ERRORS``) rather than stopping at the first, so a
submitter fixes the whole file in one go.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from contributions.models import Release, Snippet
from evaluation.models import EvaluationRun, LanguageModel
from evaluation.services import runs
from evaluation.services.language_models import language_model_create
from researchcodebench.problems import reindent

#: past this many errors the report ends with a count of the rest
MAX_REPORTED_ERRORS = 200
#: completion indices above this are surely a mistake (n completions per snippet)
MAX_COMPLETION_IDX = 99


def upload_limit_bytes() -> int:
    """The largest predictions file accepted, from ``settings.RCB_UPLOAD_MAX_BYTES``."""
    return int(settings.RCB_UPLOAD_MAX_BYTES)


def _human_size(n: int) -> str:
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


class PredictionsInvalid(Exception):
    """The predictions file was rejected; ``errors`` lists every problem found, each naming its line."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors[:3]) + (" ..." if len(errors) > 3 else ""))
        self.errors = errors


@dataclass(frozen=True)
class Prediction:
    """One valid line: the snippet it answers, and either ``code`` or ``response`` (the other is None)."""

    line: int
    task: str
    snippet: str
    snippet_id: int
    #: the snippet's indentation (columns): ``code`` is re-indented to it, as the CLI's evaluate does
    indent: int
    completion_idx: int
    code: str | None
    response: str | None


@dataclass
class ParsedPredictions:
    """The outcome of parsing: valid predictions, every error, and coverage of the release's snippets."""

    release: Release
    predictions: list[Prediction] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: (task key, snippet name) of every testable snippet of the release with no prediction at all
    missing: list[tuple[str, str]] = field(default_factory=list)
    total_snippets: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors and bool(self.predictions)

    @property
    def covered_snippets(self) -> int:
        return len({p.snippet_id for p in self.predictions})

    @property
    def n_completions(self) -> int:
        """Completions per snippet the file provides (highest index + 1)."""
        return max((p.completion_idx for p in self.predictions), default=-1) + 1

    @property
    def coverage(self) -> float:
        return self.covered_snippets / self.total_snippets if self.total_snippets else 0.0


def _release_snippets(
    release: Release,
) -> tuple[dict[str, dict[str, tuple[int, int]] | None], dict[str, list[str]]]:
    """Task key -> {snippet name -> (id, indent)} for the release (None for a task without files), and
    snippet names in document order per task."""
    tasks: dict[str, dict[str, tuple[int, int]] | None] = {}
    order: dict[str, list[str]] = {}
    for entry in release.entries.select_related("task", "task_version"):
        tasks[entry.task.key] = {} if entry.task_version.has_files else None
        order[entry.task.key] = []
    rows = (
        Snippet.objects.filter(task_version__release_entries__release=release, task_version__has_files=True)
        .order_by("task_version__task__key", "ordinal")
        .values_list("id", "name", "indent", "task_version__task__key")
    )
    for snippet_id, name, indent, task_key in rows:
        by_name = tasks.get(task_key)
        if by_name is not None:
            by_name[name] = (snippet_id, indent)
            order[task_key].append(name)
    return tasks, order


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def predictions_parse(*, data: bytes, release: Release) -> ParsedPredictions:
    """Validate a predictions JSONL file against ``release``; never raises for bad input.

    Every problem becomes one message in ``errors`` naming its line (1-based) and field: a line that is
    not JSON, a missing or mistyped field, an unknown task or snippet, a task the release holds only as
    metadata (no files to test against), a duplicate ``(task, snippet, completion_idx)``. Whole-file
    problems (too large, empty, not UTF-8) stop parsing with a single message.
    """
    parsed = ParsedPredictions(release=release)
    limit = upload_limit_bytes()
    if len(data) > limit:
        parsed.errors.append(
            f"the file is too large ({_human_size(len(data))}); the limit is {_human_size(limit)}"
        )
        return parsed
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        parsed.errors.append(
            f"the file is not UTF-8 text: line {line} has the invalid byte 0x{data[exc.start]:02x}"
        )
        return parsed
    if not text.strip():
        parsed.errors.append("the file is empty: expected one JSON object per line")
        return parsed

    tasks, order = _release_snippets(release)
    parsed.total_snippets = sum(len(names) for names in order.values())
    seen: dict[tuple[str, str, int], int] = {}
    errors: list[str] = []

    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number} is not JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            errors.append(f"line {number}: expected a JSON object, got {_json_type(obj)}")
            continue
        problems: list[str] = []
        for name in ("task", "snippet"):
            if name not in obj:
                problems.append(f"line {number}: missing field '{name}'")
            elif not isinstance(obj[name], str) or not obj[name]:
                problems.append(f"line {number}: field '{name}' must be a non-empty string")
        idx = obj.get("completion_idx", 0)
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx <= MAX_COMPLETION_IDX:
            problems.append(
                f"line {number}: field 'completion_idx' must be an integer from 0 to {MAX_COMPLETION_IDX}"
            )
        has_code, has_response = "code" in obj, "response" in obj
        if has_code and has_response:
            problems.append(f"line {number}: give either 'code' or 'response', not both")
        elif not has_code and not has_response:
            problems.append(f"line {number}: missing field 'code' (or 'response')")
        else:
            answer_field = "code" if has_code else "response"
            if not isinstance(obj[answer_field], str):
                problems.append(
                    f"line {number}: field '{answer_field}' must be a string, "
                    f"got {_json_type(obj[answer_field])}"
                )
        if problems:
            errors.extend(problems)
            continue

        task, snippet = obj["task"], obj["snippet"]
        if task not in tasks:
            errors.append(f"line {number}: unknown task '{task}' in release {release.name}")
            continue
        by_name = tasks[task]
        if by_name is None:
            errors.append(
                f"line {number}: task '{task}' in release {release.name} has no task files "
                "(published metadata only), so it cannot be tested"
            )
            continue
        if snippet not in by_name:
            errors.append(f"line {number}: unknown snippet '{snippet}' in task {task}")
            continue
        item = (task, snippet, idx)
        if item in seen:
            errors.append(f"line {number}: duplicate of line {seen[item]} (task, snippet, completion_idx)")
            continue
        seen[item] = number
        parsed.predictions.append(
            Prediction(
                line=number,
                task=task,
                snippet=snippet,
                snippet_id=by_name[snippet][0],
                indent=by_name[snippet][1],
                completion_idx=idx,
                code=obj.get("code"),
                response=obj.get("response"),
            )
        )

    if len(errors) > MAX_REPORTED_ERRORS:
        rest = len(errors) - MAX_REPORTED_ERRORS
        errors = errors[:MAX_REPORTED_ERRORS] + [f"... and {rest} more errors"]
    parsed.errors = errors
    if not errors and not parsed.predictions:
        parsed.errors.append("the file is empty: expected one JSON object per line")
    covered = {(p.task, p.snippet) for p in parsed.predictions}
    parsed.missing = [(t, s) for t, names in order.items() for s in names if (t, s) not in covered]
    return parsed


@transaction.atomic
def predictions_upload(
    *, model: LanguageModel, release: Release, data: bytes, template: str, requester: Any
) -> EvaluationRun:
    """Validate ``data`` for ``release`` and start a run that tests the predictions of ``model``.

    Raises ``PredictionsInvalid`` with every error when the file does not validate (nothing is created).
    The run has source and verification "uploaded"; its items are the valid lines, and snippets the file
    leaves out are not part of it (the run page shows them as missing coverage). ``code`` is re-indented
    to its snippet's indentation, exactly as ``python -m researchcodebench evaluate`` does, so the portal
    and the CLI test the same file the same way.
    """
    parsed = predictions_parse(data=data, release=release)
    if not parsed.ok:
        raise PredictionsInvalid(parsed.errors)
    task_versions = list(release.task_versions.filter(has_files=True))
    return runs.run_create(
        model=model,
        release=release,
        task_versions=task_versions,
        template=template,
        with_paper=False,
        n_completions=parsed.n_completions,
        temperature=None,
        source=EvaluationRun.Source.UPLOADED,
        verification=EvaluationRun.Verification.UPLOADED,
        requester=requester,
        predictions=[
            runs.Prediction(
                task=p.task,
                snippet=p.snippet,
                completion_idx=p.completion_idx,
                response=p.response or "",
                code=None if p.code is None else reindent(p.code, p.indent),
            )
            for p in parsed.predictions
        ],
    )


@transaction.atomic
def predictions_upload_new_model(
    *, model_fields: dict[str, Any], release: Release, data: bytes, template: str, requester: Any
) -> EvaluationRun:
    """Create the model described by ``model_fields`` (validated key, name, ...) and upload its predictions.

    One transaction: when the file is rejected (``PredictionsInvalid``) the model is not created either.
    """
    model = language_model_create(**model_fields)
    return predictions_upload(model=model, release=release, data=data, template=template, requester=requester)
