"""Memorisation on the pages (issue 22, item 8): the snippet page marks a near-verbatim completion with its
figures in words, the model page shows the share of its passes that are near verbatim split by the papers'
dates against its cutoff, the API carries the same figures, and a new verdict reaches the cached pages."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from contributions.models import Snippet
from evaluation.models import Completion, EvaluationRun
from evaluation.services.verdicts import test_result_record
from leaderboard.links import snippet_url
from leaderboard.services import leaderboard_refresh_run
from tests.evaluation.run_helpers import FAILED, PASSED
from tests.factories import EvaluationRunFactory, LanguageModelFactory, make_benchmark
from tests.leaderboard.test_pages import assert_accessible

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]

REFERENCE = """\
        logits = model(inputs)  # forward pass
        loss = F.cross_entropy(logits, targets, label_smoothing=0.1)
        loss.backward()
        optimizer.step()
        return {"loss": loss.item(), "accuracy": (logits.argmax(-1) == targets).float().mean()}
"""
VERBATIM = REFERENCE.replace('"', "'").replace("# forward pass", "# the logits")
RENAMED = REFERENCE.replace("logits", "out").replace("targets", "y")
SHORT = "        return x + 1\n"
#: OLD is first committed before the model's cutoff (2024-10-01), NEW after it
PAPERS = {"OLD": (dt.date(2024, 1, 1), [5, 1]), "NEW": (dt.date(2025, 1, 1), [5, 5])}


class Board:
    """One run whose verdicts go through ``test_result_record``: OLD s0 passes verbatim, OLD s1 (a
    one-line reference) passes, NEW s0 passes renamed, NEW s1 fails verbatim; NEW s1's second completion
    (verbatim) waits for its verdict (``record_last``)."""

    def __init__(self) -> None:
        self.release, self.snippets = make_benchmark(PAPERS)
        for paper, codes in {"OLD": (REFERENCE, SHORT), "NEW": (REFERENCE, REFERENCE)}.items():
            for snippet, code in zip(self.snippets[paper], codes, strict=True):
                Snippet.objects.filter(pk=snippet.pk).update(code=code)
        self.model = LanguageModelFactory(key="MEMO", knowledge_cutoff=dt.date(2024, 10, 1))
        self.run = EvaluationRunFactory(
            model=self.model, release=self.release, status=EvaluationRun.Status.TESTING, n_completions=2
        )
        plan = [
            ("OLD", 0, 0, VERBATIM, PASSED),
            ("OLD", 1, 0, "return x + 1", PASSED),
            ("NEW", 0, 0, RENAMED, PASSED),
            ("NEW", 1, 0, VERBATIM, FAILED),
        ]
        for paper, i, idx, code, verdict in plan:
            item = self._completion(paper, i, idx, code)
            test_result_record(completion_id=item.pk, verdict=verdict, worker_host="h", attempt=1)
        self.last = self._completion("NEW", 1, 1, VERBATIM)

    def _completion(self, paper: str, i: int, idx: int, code: str) -> Completion:
        return Completion.objects.create(
            run=self.run,
            snippet=self.snippets[paper][i],
            completion_idx=idx,
            stage=Completion.Stage.PENDING_TEST,
            code=code,
        )

    def record_last(self) -> None:
        test_result_record(completion_id=self.last.pk, verdict=PASSED, worker_host="h", attempt=1)


@pytest.fixture
def board() -> Board:
    return Board()


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_snippet_page_marks_a_near_verbatim_completion_and_says_why(client, board):
    page = client.get(snippet_url("NEW", "s1", board.snippets["NEW"][1].pk))

    html = page.content.decode()
    assert page.status_code == 200
    assert html.count(">near verbatim</span>") == 1
    text = _text(html)
    assert (
        "Overlap with the reference (62 normalised tokens): the longest run of tokens in common covers 100% of "
        "it, and 100% of its 5-token sequences occur in this completion. Near verbatim : it reproduces the "
        "reference almost as written (at least 80% of the sequences, and 50% of the reference in one "
        "unbroken run). The paper's code was first committed on 2025-01-01, after this model's knowledge cutoff "
        "(2024-10-01). Tokens as Python reads them, without comments, layout or quote style."
    ) in text
    assert_accessible(html)


def test_snippet_page_says_when_a_completion_is_not_near_verbatim_or_too_short_to_tell(client, board):
    renamed = _text(client.get(snippet_url("NEW", "s0", board.snippets["NEW"][0].pk)).content.decode())
    short = _text(client.get(snippet_url("OLD", "s1", board.snippets["OLD"][1].pk)).content.decode())

    assert "near verbatim</span>" not in renamed and "Not near verbatim." in renamed
    assert "The reference is too short (under 20 tokens) to tell memorisation from a correct answer." in short
    assert "first committed on 2024-01-01, on or before this model's knowledge cutoff (2024-10-01)." in short


def test_model_page_shows_the_share_of_passes_near_verbatim_before_and_after_the_cutoff(client, board):
    html = client.get("/models/MEMO/").content.decode()

    text = _text(html)
    assert (
        f"Of run {board.run.pk}'s 3 passes, 2 could be compared with the reference: 1 near verbatim, 50.0% ."
        in text
    )
    rows = re.findall(r'<tr><th scope="row">([^<]+)</th>((?:<td class="num">[^<]*</td>)+)</tr>', html)
    cells = {label: re.findall(r">([^<]*)<", tds)[::2] for label, tds in rows}
    assert cells["On or before the cutoff"] == ["2", "1", "1", "100.0%"]
    assert cells["After the cutoff"] == ["1", "1", "0", "0.0%"]
    assert_accessible(html)


def test_a_new_verdict_reaches_the_cached_model_and_snippet_pages(client, board):
    url = snippet_url("NEW", "s1", board.snippets["NEW"][1].pk)
    assert "1 near verbatim, 50.0%" in _text(client.get("/models/MEMO/").content.decode())
    assert client.get(url).content.decode().count(">near verbatim</span>") == 1

    board.record_last()

    assert "2 near verbatim, 66.7%" in _text(client.get("/models/MEMO/").content.decode())
    assert client.get(url).content.decode().count(">near verbatim</span>") == 2


def test_model_page_without_a_cutoff_says_its_passes_cannot_be_split(client, board):
    board.model.knowledge_cutoff, board.model.knowledge_cutoff_raw = None, ""
    board.model.save()

    text = _text(client.get("/models/MEMO/").content.decode())

    assert "1 near verbatim, 50.0%" in text
    assert (
        "The model's knowledge cutoff is unknown, so its passes cannot be split by the papers' dates." in text
    )


def test_the_api_carries_the_figures_of_the_model_and_of_each_result(client, board):
    model = client.get("/api/v1/models/MEMO/").json()
    results = client.get(f"/api/v1/runs/{board.run.pk}/results/").json()["results"]

    assert model["memorisation"] == {
        "all": {"passes": 3, "measured": 2, "near_verbatim": 1, "share": 50.0},
        "before_cutoff": {"passes": 2, "measured": 1, "near_verbatim": 1, "share": 100.0},
        "after_cutoff": {"passes": 1, "measured": 1, "near_verbatim": 0, "share": 0.0},
    }
    figures = {(r["paper_key"], r["snippet"], r["completion_idx"]): r for r in results}
    assert figures[("NEW", "s1", 0)]["near_verbatim"] is True
    assert figures[("NEW", "s1", 0)]["overlap_run_share"] == 1.0
    assert figures[("NEW", "s0", 0)]["near_verbatim"] is False
    assert figures[("OLD", "s1", 0)]["near_verbatim"] is None
    assert figures[("OLD", "s1", 0)]["overlap_ngram_share"] is None
    snippet = client.get(f"/api/v1/snippets/{board.snippets['NEW'][1].pk}/").json()
    assert [
        (a["completion_idx"], a["near_verbatim"], a["overlap_reference_tokens"]) for a in snippet["attempts"]
    ] == [
        (0, True, 62),
        (1, None, None),
    ]


def test_model_page_says_why_passes_without_stored_code_cannot_be_compared(client, board):
    Completion.objects.filter(run=board.run).update(
        overlap_reference_tokens=None, overlap_longest_run=None, overlap_ngram_share=None, near_verbatim=None
    )

    html = client.get("/models/MEMO/").content.decode()

    assert f"None of run {board.run.pk}'s 3 passes could be compared with its reference" in _text(html)
    assert 'id="memorisation-table"' not in html


def _finish(run: EvaluationRun) -> None:
    EvaluationRun.objects.filter(pk=run.pk).update(
        status=EvaluationRun.Status.FINISHED, finished_at=dt.datetime.now(dt.UTC)
    )
    leaderboard_refresh_run(run=run)


def test_board_row_marks_a_run_with_near_verbatim_passes_with_its_share(client, board):
    _finish(board.run)
    clean = EvaluationRunFactory(
        model=LanguageModelFactory(key="CLEAN"), release=board.release, status=EvaluationRun.Status.FINISHED
    )
    leaderboard_refresh_run(run=clean)

    html = client.get("/").content.decode()

    rows = {
        m.group(1): m.group(2) for m in re.finditer(r'<tr[^>]*data-model="([^"]+)">(.*?)</tr>', html, re.S)
    }
    assert "50% near verbatim" in rows["MEMO"]
    assert "1 of the 2 passes compared with the reference reproduces it almost as written" in _text(
        rows["MEMO"]
    )
    assert "near verbatim" not in rows["CLEAN"]
    assert_accessible(html)


def test_compare_runs_table_shows_each_runs_near_verbatim_share(client, board):
    other = EvaluationRunFactory(
        model=LanguageModelFactory(key="OTHER"), release=board.release, status=EvaluationRun.Status.TESTING
    )
    item = Completion.objects.create(
        run=other,
        snippet=board.snippets["OLD"][0],
        completion_idx=0,
        stage=Completion.Stage.PENDING_TEST,
        code=RENAMED,
    )
    test_result_record(completion_id=item.pk, verdict=PASSED, worker_host="h", attempt=1)
    _finish(board.run)
    _finish(other)

    html = client.get("/compare/?models=MEMO&models=OTHER").content.decode()

    table = re.search(r'<table class="table" id="compare-runs">.*?</table>', html, re.S).group(0)
    assert "Near-verbatim passes" in table
    memo, plain = re.findall(r"<tr>\s*<th scope=\"row\">.*?</tr>", table, re.S)
    assert "50.0% 1 of 2 compared 50% near verbatim" in _text(memo)
    assert "0.0% 0 of 1 compared" in _text(plain) and "near verbatim" not in plain
    assert_accessible(html)
