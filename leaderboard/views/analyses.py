"""The analysis pages over the runs the filters keep: error categories, contamination, with vs without
the paper."""

from __future__ import annotations

from django.http import HttpRequest, QueryDict
from django.urls import reverse
from django.utils.http import urlencode

from leaderboard.charts import bars, dates, encoding, svg
from leaderboard.forms import BoardFilterForm
from leaderboard.links import (
    csv_url,
    model_url,
    snippet_url,
)
from leaderboard.presenters import (
    ablation_deltas,
    ablation_scatter,
    ablation_snippet_chart,
)
from leaderboard.scopes import Scope
from leaderboard.selectors.analyses import (
    ErrorBreakdown,
    ablation_pairs,
    contamination_overview,
    error_breakdown,
    release_with_test_output,
)
from leaderboard.views.pages import FilteredPage, filtered_view


def _errors_context(form: BoardFilterForm, params: QueryDict) -> dict:
    """Without a ``release`` the page starts on the release with test output (``release_with_test_output``)
    rather than the default one: the published results of a paper hold verdicts only, whose failures would
    all be unclassified."""
    if not params.get("release"):
        started = release_with_test_output()
        if started is not None:
            params = params.copy()
            params["release"] = started
            form = BoardFilterForm(params)
    data = error_breakdown(filters=form.filters)
    share_chart = bars.bar_chart(
        [bars.Bar(c.label, c.share, c.label, note=f"({c.count})") for c in data.categories],
        chart_id="error-shares",
        title="Share of each category across all model failures",
        x_label="Share of failed completions (%)",
        unit="%",
        max_value=100,
        legend=False,
        digits=1,
        swatches=encoding.category_swatches(),
    )
    categories = [c.category for c in data.categories]
    with_failures = [m for m in data.per_model if m.total]
    per_model_chart = bars.stacked_bar_chart(
        [m.model.name for m in with_failures],
        [bars.Series(data.labels.get(c, c), [m.counts.get(c, 0) for m in with_failures]) for c in categories],
        chart_id="error-per-model",
        title="Failures per model by category",
        x_label="Failed completions",
        row_hrefs=[model_url(m.model.key) for m in with_failures],
        swatches=encoding.category_swatches(),
    )
    infra_total = sum(c.count for c in data.infrastructure)
    model_rows = [
        {
            "model": m.model,
            "cells": [m.counts.get(c, 0) for c in categories],
            "total": m.total,
            "infra": sum(m.infrastructure.values()),
        }
        for m in data.per_model
    ]
    return {
        "model_rows": model_rows,
        "data": data,
        "categories": categories,
        "share_chart": svg.skippable(share_chart),
        "per_model_chart": svg.skippable(per_model_chart),
        "infra_total": infra_total,
        "model_total": sum(c.count for c in data.categories),
        "csv_url": csv_url("errors", params),
        "without_output": _without_output(data, form),
        "form": form,
    }


def _without_output(data: ErrorBreakdown, form: BoardFilterForm) -> dict | None:
    """Why the runs shown that were imported from the paper's published results have no test output, and
    where there are runs with test output (``tested``: a link to that release's errors; None when it is the
    one shown or none has); None when every run shown has test output."""
    if not data.without_output:
        return None
    tested = release_with_test_output()
    shown = form.filters.release
    return {
        "names": data.without_output,
        "every": len(data.without_output) == len(data.per_model),
        "tested": tested if tested is not None and tested != shown else None,
        "tested_url": f"{reverse('leaderboard:errors')}?{urlencode({'release': tested})}" if tested else "",
    }


def _contamination_context(form: BoardFilterForm, params: QueryDict) -> dict:
    data = contamination_overview(filters=form.filters)
    items = [
        dates.TimelineItem(m.model.name, m.model.knowledge_cutoff, "model", model_url(m.model.key))
        for m in sorted(
            data.models,
            key=lambda m: (m.model.knowledge_cutoff is None, m.model.knowledge_cutoff or 0, m.model.name),
        )
    ]
    items += [
        dates.TimelineItem(p.key, p.first_commit_date, "paper", reverse("leaderboard:paper", args=[p.key]))
        for p in data.papers
    ]
    markers = []
    if data.global_cutoff:
        markers.append(("Original global cutoff", data.global_cutoff))
    if data.global_cutoff_fixed and data.global_cutoff_fixed != data.global_cutoff:
        markers.append(("Latest cutoff as a date", data.global_cutoff_fixed))
    timeline = dates.timeline(
        items,
        chart_id="contamination-timeline",
        title="Model knowledge cutoffs vs paper first-commit dates",
        markers=markers,
    )
    dated = [m for m in data.models if m.before is not None]
    before_after = bars.grouped_bar_chart(
        [m.model.name for m in dated],
        [
            bars.Series("Papers on or before its cutoff", [m.before.scaled_pass_at_1 for m in dated]),
            bars.Series("Papers after its cutoff", [m.after.scaled_pass_at_1 for m in dated]),
        ],
        chart_id="contamination-before-after",
        title="Scaled Pass@1 before vs after each model's cutoff",
        x_label=encoding.SCORE_TITLE,
        hrefs=[model_url(m.model.key) for m in dated],
    )
    return {
        "data": data,
        "timeline": svg.skippable(timeline),
        "before_after": svg.skippable(before_after),
        "kept": sum(1 for p in data.papers if p.kept_by_global_rule),
        "csv_url": csv_url("papers", params),
    }


def _ablation_context(form: BoardFilterForm, params: QueryDict) -> dict:
    data = ablation_pairs(filters=form.filters)
    pairs = [
        p
        for p in data.pairs
        if p.with_paper.scaled_pass_at_1 is not None and p.without_paper.scaled_pass_at_1 is not None
    ]
    return {
        "data": data,
        "scatter": svg.skippable(ablation_scatter(pairs)),
        "deltas": svg.skippable(ablation_deltas(pairs)),
        "snippet_chart": svg.skippable(ablation_snippet_chart(data.snippets[:40])),
        "snippet_rows": [
            {"s": s, "url": snippet_url(s.paper_key, s.name, s.snippet_id)} for s in data.snippets
        ],
        "csv_url": csv_url("snippets", QueryDict()),
    }


def _errors_scope(request: HttpRequest) -> Scope | None:
    """Without a ``release`` the errors page starts on the release with test output (``_errors_context``),
    which any run may change: the page is then stored under every release's scope."""
    return Scope(all_releases=True) if not request.GET.get("release") else None


def _every_release(_request: HttpRequest) -> Scope:
    return Scope(all_releases=True)  # the snippets' solve rates count every run


#: the analysis pages, each one entry of ``filtered_view``'s table
PAGES = {
    "errors": FilteredPage(
        "errors", "leaderboard/errors.html", "Error categories", _errors_context, scope=_errors_scope
    ),
    "contamination": FilteredPage(
        "contamination", "leaderboard/contamination.html", "Contamination", _contamination_context
    ),
    "ablation": FilteredPage(
        "ablation", "leaderboard/ablation.html", "With vs without the paper", _ablation_context,
        scope=_every_release,
    ),
}  # fmt: skip
errors_page = filtered_view(PAGES["errors"])
contamination_page = filtered_view(PAGES["contamination"])
ablation_page = filtered_view(PAGES["ablation"])
