"""A snippet's page (its completions, verdicts, raw answers and memorisation figures), its prompt as text,
and the maintainers' curation view of snippet statistics."""

from __future__ import annotations

import math

from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_safe

from contributions.models import Release, Snippet
from contributions.params import optional_id
from contributions.roles import REVIEW_PERMISSION
from evaluation.models import EvaluationRun
from leaderboard import code_diff
from leaderboard.links import (
    snippet_url,
)
from leaderboard.presenters import (
    sort_label,
    stat_headers,
    verbatim_rule,
)
from leaderboard.scopes import Scope
from leaderboard.selectors.curation import snippet_curation
from leaderboard.selectors.snippets import (
    Attempt,
    SnippetDetail,
    snippet_detail,
    snippet_lookup,
    snippet_problem,
)
from leaderboard.snippet_statistics import (
    MIN_MODELS,
    STATUS_LABELS,
    StatRow,
    parse_sort,
)
from leaderboard.views.pages import cached_page
from researchcodebench import problems

CURATION_PARAMS = ("release", "status", "paper", "sort")


@login_required
@permission_required(REVIEW_PERMISSION, raise_exception=True)
@require_safe
def snippet_curation_page(request: HttpRequest) -> HttpResponse:
    """Maintainers only (as the review queue): every snippet of a release (``?release=``, default: the
    board's) with its statistics over that release's board, filtered by ``?status=`` and ``?paper=``,
    sorted by ``?sort=``. Cached by the release's scope, as a board page; the body holds nothing of the
    visitor's and is only ever served after the permission check."""
    return cached_page(
        request, page="snippet_curation", template="leaderboard/snippet_curation.html",
        title="Snippet curation", build=lambda _form, query: _curation_context(query),
        params=CURATION_PARAMS, filtered=False,
    )  # fmt: skip


def _curation_context(params: QueryDict) -> dict:
    sort = parse_sort(params.get("sort", ""))
    status = params.get("status", "")
    status = status if status in STATUS_LABELS else ""
    try:
        curation = snippet_curation(
            release=params.get("release", "").strip()[:100],
            status=status,
            paper=params.get("paper", "").strip()[:100],
            sort=sort,
        )
    except Release.DoesNotExist as exc:
        raise Http404(f"release: {exc.args[0]}") from None
    rows = [
        StatRow(
            r.order, r.name, snippet_url(r.paper_key, r.name, r.id), r.stats, paper_key=r.paper_key,
            task=r.task, depth=r.depth,
        )
        for r in curation.rows
    ]  # fmt: skip
    filters = params.copy()
    filters.pop("sort", None)
    return {
        "c": curation,
        "stat_rows": rows,
        "stat_headers": stat_headers(params, "sort", sort),
        "stat_sort": sort,
        "stat_caption": f"{len(rows)} of {curation.total} snippets, {sort_label(sort)}.",
        "status": status,
        "statuses": [(key, label, curation.counts[key]) for key, label in STATUS_LABELS.items()],
        "paper": params.get("paper", ""),
        "min_models": MIN_MODELS,
    }


SNIPPET_PARAMS = ("id", "template", "paper", "run")


def _problem_params(params: QueryDict, attempts: tuple[Attempt, ...]) -> tuple[str, bool]:
    template = params.get("template", "")
    paper = params.get("paper", "")
    if template not in problems.TEMPLATES:
        template = attempts[0].template if attempts and attempts[0].template in problems.TEMPLATES else ""
        template = template or problems.DEFAULT_TEMPLATE
    with_paper = (
        paper != "without" if paper in ("with", "without") else (attempts[0].with_paper if attempts else True)
    )
    return template, with_paper


def _snippet_detail(key: str, name: str, params: QueryDict) -> SnippetDetail:
    raw_id = params.get("id", "")
    try:
        snippet_id = snippet_lookup(paper_key=key, name=name, snippet_id=optional_id(raw_id))
        return snippet_detail(snippet_id=snippet_id)
    except Snippet.DoesNotExist as exc:
        raise Http404(str(exc)) from None


@require_safe
def snippet_page(request: HttpRequest, key: str, name: str) -> HttpResponse:
    """A snippet: its problem, reference code and every completion. Cached across releases: its
    completions come from runs of the releases that hold its paper's tasks (``Scope.paper``)."""
    return cached_page(
        request, page="snippet", args=(key, name), template="leaderboard/snippet_detail.html", title=name,
        build=lambda _form, query: _snippet_context(key, name, query), scope=Scope(paper=key),
        params=SNIPPET_PARAMS, filtered=False, fragment=False,
    )  # fmt: skip


def _snippet_context(key: str, name: str, params: QueryDict) -> dict:
    detail = _snippet_detail(key, name, params)
    template, with_paper = _problem_params(params, detail.attempts)
    problem = snippet_problem(
        task_version_id=detail.task_version_id, name=detail.name, template=template, with_paper=with_paper
    )
    attempts = [
        {
            "a": a,
            "diff": code_diff.code_diff(detail.reference_code, a.code)
            if detail.reference_code and a.code
            else None,
            "code_lines": code_diff.highlight_lines(a.code) if a.code and not detail.reference_code else None,
            # ``?run=`` (a link to one model's completion) opens that run's completions
            "target": params.get("run") == str(a.run_id),
            "raw_url": f"{snippet_url(detail.paper_key, detail.name, detail.id)}&{urlencode({'run': a.run_id})}"
            f"#raw-{a.run_id}-{a.completion_idx}",
            "overlap": _overlap_figures(a),
        }
        for a in sorted(
            detail.attempts, key=lambda a: (a.passed is not True, a.model.name.lower(), a.completion_idx)
        )
    ]
    base = snippet_url(detail.paper_key, detail.name, detail.id)
    return {
        **_raw_answer_context(detail, params, base),
        "page_title": f"{detail.name} · {detail.paper_key}",
        "d": detail,
        "problem": problem,
        "attempts": attempts,
        "reference_lines": code_diff.highlight_lines(detail.reference_code) if detail.reference_code else [],
        "prompt_url": reverse("leaderboard:snippet_prompt", args=[detail.paper_key, detail.name])
        + "?"
        + urlencode({"id": detail.id, "template": template, "paper": "with" if with_paper else "without"}),
        "problem_links": [
            (
                t,
                p,
                f"{base}&{urlencode({'template': t, 'paper': p})}",
                t == template and (p == "with") == with_paper,
            )
            for t in problems.TEMPLATES
            for p in ("with", "without")
        ],
        "paper_url": reverse("leaderboard:paper", args=[detail.paper_key]),
    }


#: why a completion has no raw response, by the run's source (``EvaluationRun.Source``)
NO_RAW_RESPONSE = {
    EvaluationRun.Source.UPLOADED: (
        "No raw response: this completion was uploaded as predictions without the model's answer text "
        "(the submitter sent the code only), so only the code that was tested can be shown."
    ),
    EvaluationRun.Source.IMPORTED: (
        "No raw response: results imported from the paper's published data hold verdicts only."
    ),
}
NO_RAW_RESPONSE_OTHER = "No raw response is stored for this completion."


def _raw_answer_context(detail: SnippetDetail, params: QueryDict, base: str) -> dict:
    """The snippet page's raw answers: a link per run to show its completions' raw responses next to the
    code extracted from them (``?run=``), and the chosen run's completions with the words for a missing
    response."""
    runs: dict[int, dict] = {}
    for a in detail.attempts:
        choice = runs.setdefault(
            a.run_id,
            {"run_id": a.run_id, "model": a.model, "with_paper": a.with_paper, "passed": 0, "results": 0},
        )
        choice["passed"] += a.passed is True
        choice["results"] += a.passed is not None
    chosen = params.get("run", "")
    for choice in runs.values():
        choice["url"] = f"{base}&{urlencode({'run': choice['run_id']})}#raw-answer"
        choice["current"] = str(choice["run_id"]) == chosen
    shown = [
        {"a": a, "no_raw": NO_RAW_RESPONSE.get(a.run_source, NO_RAW_RESPONSE_OTHER)}
        for a in detail.attempts
        if str(a.run_id) == chosen
    ]
    return {
        "raw_choices": sorted(runs.values(), key=lambda c: (c["model"].name.lower(), c["run_id"])),
        "raw_shown": shown,
        "raw_unknown": bool(chosen) and not shown,
    }


def _whole_percent(share: float) -> int:
    """``share`` (0-1) in whole percent, rounded down: a share just under a threshold never reads as it."""
    return math.floor(round(100 * share, 6))


def _overlap_figures(a: Attempt) -> dict | None:
    """A completion's memorisation figures as the snippet page words them (whole percentages, and the
    thresholds they are judged by); None when it was not measured."""
    if a.overlap_run_share is None:
        return None
    rule = verbatim_rule()
    return {
        "run": _whole_percent(a.overlap_run_share),
        "ngram": None if a.overlap_ngram_share is None else _whole_percent(a.overlap_ngram_share),
        "run_threshold": rule["run"],
        "ngram_threshold": rule["ngram"],
        "min_tokens": rule["min_tokens"],
    }


@require_safe
def snippet_prompt(request: HttpRequest, key: str, name: str) -> HttpResponse:
    """The full prompt of a snippet as plain text (the page shows the code; the paper text is long)."""
    detail = _snippet_detail(key, name, request.GET)
    template, with_paper = _problem_params(request.GET, detail.attempts)
    problem = snippet_problem(
        task_version_id=detail.task_version_id, name=detail.name, template=template, with_paper=with_paper
    )
    if not problem.available:
        return HttpResponse(problem.reason, content_type="text/plain; charset=utf-8", status=404)
    return HttpResponse(problem.prompt, content_type="text/plain; charset=utf-8")
