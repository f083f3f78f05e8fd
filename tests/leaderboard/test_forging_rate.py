"""Issue 32 item 5: the forging rate, forged / (forged + confirmed) passes, on the board (a sortable column
linking to the run's confirmations), the model page, the read API and its CSV, computed from the verdicts
recorded through the service; imported results say "not measured" (docs/scoring.md#forging-rate)."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest

from evaluation.models import EvaluationRun
from leaderboard.services import leaderboard_refresh_run
from tests.factories import (
    EvaluationRunFactory,
    LanguageModelFactory,
    confirmation_verdict,
    make_benchmark,
    make_run,
    record_verdicts,
)

pytestmark = pytest.mark.django_db

NOT_MEASURED_IMPORTED = "not measured: imported results carry no code to confirm"


class Board:
    """Papers OLD (2024, snippets of 3 and 2 lines) and NEW (2025, 4 lines); three finished runs covering
    every snippet:

    - FORGER: 4 confirmed passes, 1 unconfirmed, 1 forged verdict (on NEW): 20.0 %, 0.0 % on OLD alone;
    - HONEST: 2 confirmed passes and a pass no confirmation could judge (counted nowhere): 0.0 %;
    - PAPER: the paper's published results, imported without code: not measured.
    """

    def __init__(self) -> None:
        self.release, self.snippets = make_benchmark(
            {"OLD": (dt.date(2024, 1, 1), [3, 2]), "NEW": (dt.date(2025, 6, 1), [4])}, release="r1"
        )
        (old0, old1), (new0,) = self.snippets["OLD"], self.snippets["NEW"]
        self.forger = self.run("FORGER", n_completions=2)
        record_verdicts(
            self.forger,
            [
                (old0, 0, confirmation_verdict("confirmed")),
                (old0, 1, confirmation_verdict("confirmed")),
                (old1, 0, confirmation_verdict("unconfirmed")),
                (old1, 1, confirmation_verdict("confirmed")),
                (new0, 0, confirmation_verdict("forged", variant="v-mutant-7")),
                (new0, 1, confirmation_verdict("confirmed")),
            ],
        )
        self.honest = self.run("HONEST")
        record_verdicts(
            self.honest,
            [
                (old0, 0, confirmation_verdict("confirmed")),
                (old1, 0, confirmation_verdict("confirmed")),
                (new0, 0, confirmation_verdict("unconfirmable")),
            ],
        )
        self.paper = make_run(
            self.snippets,
            {"OLD": "P F", "NEW": "P"},
            model=LanguageModelFactory(key="PAPER", name="PAPER"),
            release=self.release,
            source=EvaluationRun.Source.IMPORTED,
        )
        leaderboard_refresh_run(run=self.paper)

    def run(self, key: str, **kwargs) -> EvaluationRun:
        model = LanguageModelFactory(key=key, name=key)
        return EvaluationRunFactory(model=model, release=self.release, **kwargs)


@pytest.fixture
def board() -> Board:
    return Board()


def cell(page: str, model: str) -> str:
    """The forging-rate cell of ``model``'s row on the board."""
    row = page.split(f'data-model="{model}">', 1)[1].split("</tr>", 1)[0]
    return row.split('<td class="num c-forging">', 1)[1].split("</td>", 1)[0]


def board_order(page: str) -> list[str]:
    table = page.split('id="board-table"', 1)[1].split("</table>", 1)[0]
    return [part.split('"', 1)[0] for part in table.split('data-model="')[1:]]


def test_the_board_shows_each_runs_forging_rate_linked_to_its_confirmations(client, board):
    page = client.get("/").content.decode()
    assert '<th scope="col" class="c-forging num">' in page
    forger = cell(page, "FORGER")
    assert f'<a href="/runs/{board.forger.pk}/#run-confirmation"' in forger
    assert ">20.0%</a>" in forger and '<span class="sub">1 of 5</span>' in forger
    assert ">0.0%</a>" in cell(page, "HONEST")
    paper = cell(page, "PAPER")
    assert "<a " not in paper and '<span aria-hidden="true">—</span>' in paper
    assert f'title="{NOT_MEASURED_IMPORTED}"' in paper
    assert f'<span class="visually-hidden">{NOT_MEASURED_IMPORTED}</span>' in paper


def test_the_board_sorts_by_forging_rate_with_the_unmeasured_last(client, board):
    ascending = client.get("/?sort=forging_rate").content.decode()
    assert board_order(ascending) == ["HONEST", "FORGER", "PAPER"]
    assert 'aria-sort="ascending"><a class="sort" href="?sort=-forging_rate"' in ascending
    assert board_order(client.get("/?sort=-forging_rate").content.decode()) == ["FORGER", "HONEST", "PAPER"]


def test_the_api_and_its_csv_carry_the_rate_and_counts_null_and_empty_where_not_measured(client, board):
    rows = {r["model"]["key"]: r for r in client.get("/api/v1/leaderboard/").json()["results"]}
    fields = ("forging_rate", "passes_forged", "passes_confirmed", "passes_unconfirmed")
    assert [rows["FORGER"][f] for f in fields] == [20.0, 1, 4, 1]
    assert [rows["HONEST"][f] for f in fields] == [0.0, 0, 2, 0]
    assert [rows["PAPER"][f] for f in fields] == [None, 0, 0, 0]

    response = client.get("/api/v1/leaderboard/?format=csv")
    table = {r["model.key"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}
    assert [table["FORGER"][f] for f in fields] == ["20.0", "1", "4", "1"]
    assert [table["PAPER"][f] for f in fields] == ["", "0", "0", "0"]


def test_a_paper_date_window_gives_the_rate_of_the_papers_it_keeps(client, board):
    rows = client.get("/api/v1/leaderboard/?paper_to=2024-12-31").json()["results"]
    forger = next(r for r in rows if r["model"]["key"] == "FORGER")
    assert (forger["forging_rate"], forger["passes_forged"], forger["passes_confirmed"]) == (0.0, 0, 3)


def test_the_model_page_shows_the_rate_over_its_runs_each_linked_to_its_confirmations(client, board):
    page = client.get("/models/FORGER/").content.decode()
    section = page.split('<section aria-labelledby="forging-h" id="forging">', 1)[1].split("</section>", 1)[0]
    assert (
        "<strong>20.0%</strong> (1 forged of 5 passes confirmed or forged, 1 unconfirmed, over 1 run)"
        in section
    )
    row = section.split(f'<tr data-run="{board.forger.pk}">', 1)[1].split("</tr>", 1)[0]
    assert f'<a href="/runs/{board.forger.pk}/#run-confirmation">#{board.forger.pk}</a>' in row
    assert '<td class="num">4</td><td class="num">1</td><td class="num">1</td>' in row

    detail = client.get("/api/v1/models/FORGER/").json()
    assert detail["forging"] == {
        "passes_confirmed": 4,
        "passes_unconfirmed": 1,
        "passes_forged": 1,
        "forging_rate": 20.0,
        "runs": 1,
    }
    assert (detail["run"]["forging_rate"], detail["runs"][0]["passes_forged"]) == (20.0, 1)


def test_imported_results_are_not_measured_on_the_model_page_and_in_its_api(client, board):
    page = client.get("/models/PAPER/").content.decode()
    section = page.split('<section aria-labelledby="forging-h" id="forging">', 1)[1].split("</section>", 1)[0]
    assert section.count(f'<span class="visually-hidden">{NOT_MEASURED_IMPORTED}</span>') == 2  # total, run
    detail = client.get("/api/v1/models/PAPER/").json()
    assert detail["forging"]["forging_rate"] is None and detail["run"]["forging_rate"] is None


def test_both_new_categories_are_on_the_error_pages(client, board):
    errors = client.get("/errors/").content.decode()
    categories = errors.split('id="category-table"', 1)[1].split("</table>", 1)[0]
    assert '<th scope="row">Verdict forged</th><td class="num">1</td>' in categories
    assert '<th scope="row">Pass not confirmable</th><td class="num">1</td>' in categories
    assert "Verdict forged" in client.get("/models/FORGER/").content.decode()


def test_a_new_forged_verdict_moves_the_board_and_model_page_at_once(client, board):
    first = client.get("/")
    model_page = client.get("/models/HONEST/")
    record_verdicts(board.honest, [(board.snippets["NEW"][0], 1, confirmation_verdict("forged"))])
    again = client.get("/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200 and again["ETag"] != first["ETag"]
    assert ">33.3%</a>" in cell(again.content.decode(), "HONEST")
    assert client.get("/models/HONEST/", HTTP_IF_NONE_MATCH=model_page["ETag"]).status_code == 200
