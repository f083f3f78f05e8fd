"""Comparing two or more models: per-paper and per-snippet differences on the runs they share."""

from __future__ import annotations

from dataclasses import replace

from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import reverse
from django.views.decorators.http import require_safe

from leaderboard import vega
from leaderboard.charts import bars, encoding, svg
from leaderboard.links import (
    SnippetLinks,
    compare_url,
    model_url,
    run_results_csv_url,
)
from leaderboard.scopes import Scope
from leaderboard.selectors.compare import COMPARE_LIMIT, ModelComparison, Setting, model_compare
from leaderboard.selectors.picking import MATCHES_SHOWN, Picked, model_choices, models_pick
from leaderboard.views.pages import cached_page

COMPARE_NAMES_READ = 2 * COMPARE_LIMIT


@require_safe
def compare_page(request: HttpRequest) -> HttpResponse:
    """``/compare/?models=A&models=B``: per-paper and per-snippet differences of two or more models, each
    named by display name or key (any case) or a part of one that picks one model; the board's checkboxes
    send the same query."""
    return cached_page(
        request, page="compare", template="leaderboard/compare.html", title="Compare models",
        build=lambda _form, query: _compare_context(query),
        params=("models", "release", "template", "paper", "covers"), filtered=False,
        scope=Scope(models=tuple(n.strip() for n in request.GET.getlist("models")[:COMPARE_NAMES_READ])),
    )  # fmt: skip


def _compared_rows(data: ModelComparison) -> list[dict]:
    """The comparison's snippets with their links: the snippet page and each model's completion."""
    links = SnippetLinks()
    rows = []
    for sn in data.snippets:
        path = links.path(sn.paper_key, sn.name)
        cells = [
            {
                "c": c,
                "url": links.at_completion(path, sid, c.run_id, c.completion_idx)
                if sid is not None and c.run_id is not None and c.completion_idx is not None
                else "",
            }
            for c, sid in zip(sn.cells, sn.snippet_ids, strict=True)
        ]
        rows.append(
            {
                "s": sn,
                "cells": cells,
                "url": links.pinned(path, next(i for i in sn.snippet_ids if i is not None)),
            }
        )
    return rows


def _compare_picked(names: list[str]) -> tuple[Picked, list[str]]:
    """The models ``names`` picks (at most ``COMPARE_LIMIT``) and the problems to show: each unknown or
    ambiguous name, too many models."""
    picked = models_pick(names=names)
    problems_found = [
        f"No model is called “{name}”: type a model's name, key or developer." for name in picked.unknown
    ]
    problems_found += [
        f"“{name}” matches {len(matches) if len(matches) <= MATCHES_SHOWN else f'more than {MATCHES_SHOWN}'} "
        "models: pick one below."
        for name, matches in picked.ambiguous
    ]
    if len(picked.keys) > COMPARE_LIMIT:
        problems_found.append(
            f"At most {COMPARE_LIMIT} models compare at once: the first {COMPARE_LIMIT} are shown."
        )
        picked = replace(picked, keys=picked.keys[:COMPARE_LIMIT], names=picked.names[:COMPARE_LIMIT])
    return picked, problems_found


def _asked_setting(params: QueryDict) -> Setting | None:
    """The setting the query asks for (``release``, ``template``, ``paper``: with or without; without a
    release, ``covers``: what the runs cover), None unless it names a template and a paper setting."""
    template, paper = params.get("template", "").strip(), params.get("paper", "")
    if not template or paper not in ("with", "without"):
        return None
    release = params.get("release", "").strip()[:100] or None
    covers = "" if release else params.get("covers", "").strip()[:200]
    return Setting(release, template[:100], paper == "with", covers)


def _ambiguous_choices(picked: Picked) -> list[dict]:
    """Each ambiguous name with a link per match: the comparison with that model in its place."""
    out = []
    for name, matches in picked.ambiguous:
        others = [*picked.names, *(n for n, _ in picked.ambiguous if n != name)]
        out.append(
            {
                "name": name,
                "matches": [{"m": m, "url": compare_url([*others, m.name])} for m in matches[:MATCHES_SHOWN]],
            }
        )
    return out


def _compare_context(params: QueryDict) -> dict:
    """The comparison of the models ``params`` names (display names or keys, as ticked on the board or
    typed with the autocomplete) on one setting (``_asked_setting``, else the one ``setting_choice``
    picks): no model yet is a hint to pick some, an unknown or ambiguous name a problem naming it, models
    with no common setting the settings each has and the nearest common one."""
    picked, problems_found = _compare_picked(params.getlist("models")[:COMPARE_NAMES_READ])
    asked = _asked_setting(params)
    choice, data = model_compare(keys=picked.keys, setting=asked) if len(picked.keys) >= 2 else (None, None)
    context: dict = {
        "picked": list(zip(picked.keys, picked.names, strict=True)),
        "unknown": picked.unknown,
        "ambiguous": _ambiguous_choices(picked),
        "choices": model_choices(),
        "problems": problems_found,
        "choice": choice,
        "data": data,
        "page_title": "Compare models",
    }
    if choice is not None:
        names = dict(zip(picked.keys, picked.names, strict=True))
        context["other_settings"] = [
            {"s": s, "url": compare_url(picked.names, s)} for s in choice.common if s != choice.chosen
        ]
        if choice.nearest is not None:
            context["nearest_url"] = compare_url([names[k] for k in choice.nearest_keys], choice.nearest)
            context["nearest_names"] = [names[k] for k in choice.nearest_keys]
    if data is None:
        return context
    names = [d.model.name for d in data.models]
    context["page_title"] = "Compare " + " vs ".join(names)
    context["pairs"] = [{"a": names[p.first], "b": names[p.second], "d": p.difference} for p in data.pairs]
    context["paper_chart"] = svg.skippable(
        bars.grouped_bar_chart(
            [p.paper_key for p in data.papers],
            [
                bars.Series(d.model.name, [p.scores[i] for p in data.papers])
                for i, d in enumerate(data.models)
            ],
            chart_id="compare-papers",
            title="Scaled Pass@1 per paper",
            x_label=encoding.SCORE_TITLE,
            max_value=100,
            hrefs=[reverse("leaderboard:paper", args=[p.paper_key]) for p in data.papers],
        )
    )
    context["paper_spec"] = vega.compare_papers_spec(data, title="Scaled Pass@1 per paper")
    context["snippets"] = _compared_rows(data)
    context["models"] = [
        {"d": d, "url": model_url(d.model.key), "csv": run_results_csv_url(d.run.run_id) if d.run else ""}
        for d in data.models
    ]
    return context
