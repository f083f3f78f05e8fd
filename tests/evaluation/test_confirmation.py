"""Issue 32 item 5 on the evaluation side: a verdict's confirmation against an impossible variant of its test
is recorded with it (a worker's verdict and a maintainer's re-judge), and the run page counts confirmed,
unconfirmed and forged passes, lists the unconfirmed ones, and shows which verdicts were forged and against
which variant to maintainers only (docs/integrity.md, docs/scoring.md#forging-rate)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Completion, EvaluationRun, TestResult
from evaluation.selectors.counts import forging_rate
from evaluation.selectors.integrity import FORGED_REDACTED, run_confirmation
from evaluation.services.rejudge import test_result_rejudge_record
from tests.factories import (
    EvaluationRunFactory,
    LanguageModelFactory,
    MaintainerFactory,
    UserFactory,
    confirmation_verdict,
    make_release,
    make_run,
    record_verdicts,
)

pytestmark = pytest.mark.django_db


def confirmed_run(source: str = EvaluationRun.Source.UPLOADED) -> EvaluationRun:
    """A finished run of ``make_release`` (snippets a1, a2 of task alpha, b1 of beta), two completions each:
    3 confirmed passes, 2 unconfirmed ones, one forged verdict (b1 #1, variant v-mutant-7), a pass no
    confirmation could judge and a plain failure (a2 #1 failed, b1 #0 unconfirmable). Forging rate: 1 of 4."""
    release = make_release()
    run = EvaluationRunFactory(model=LanguageModelFactory(), release=release, source=source, n_completions=2)
    versions = [release.entries.get(task_version__task__key=key).task_version for key in ("alpha", "beta")]
    snippets = {s.name: s for version in versions for s in version.snippets.all()}
    record_verdicts(
        run,
        [
            (snippets["a1"], 0, confirmation_verdict("confirmed")),
            (snippets["a1"], 1, confirmation_verdict("confirmed", variant="v-expected-2", slate="container")),
            (snippets["a2"], 0, confirmation_verdict("unconfirmed")),
            (snippets["a2"], 1, confirmation_verdict("failed")),
            (snippets["b1"], 0, confirmation_verdict("unconfirmable")),
            (snippets["b1"], 1, confirmation_verdict("forged", variant="v-mutant-7", slate="container")),
        ],
    )
    return run


def item(run: EvaluationRun, snippet: str, idx: int) -> Completion:
    return run.completions.select_related("result").get(snippet__name=snippet, completion_idx=idx)


@pytest.mark.parametrize("source", [EvaluationRun.Source.UPLOADED, EvaluationRun.Source.GENERATED])
def test_the_verdict_of_record_keeps_its_confirmation_variant_and_slate(source):
    run = confirmed_run(source)
    confirmed, forged = item(run, "a1", 1).result, item(run, "b1", 1).result
    assert (confirmed.outcome, confirmed.confirmation, confirmed.variant, confirmed.variant_slate) == (
        "passed",
        "confirmed",
        "v-expected-2",
        "container",
    )
    assert (forged.outcome, forged.category, forged.confirmation, forged.variant, forged.variant_slate) == (
        "failed",
        "verdict_forged",
        "forged",
        "v-mutant-7",
        "container",
    )
    assert "variant v-mutant-7" in item(run, "b1", 1).error
    assert (item(run, "a2", 0).result.confirmation, item(run, "a2", 1).result.confirmation) == (
        "unconfirmed",
        "",
    )
    assert not hasattr(TestResult, "tests")  # how each test method ended is not stored


def test_the_run_counts_forged_verdicts_apart_from_a_pass_no_confirmation_could_judge():
    run = confirmed_run()
    c = run_confirmation(run=run, viewer=MaintainerFactory())
    assert (c.confirmed, c.unconfirmed, c.forged) == (2, 1, 1)
    assert c.forging_rate == forging_rate(forged=1, confirmed=2) == pytest.approx(100 / 3)
    assert [(f.snippet, f.completion_idx, f.variant, f.variant_slate) for f in c.forged_rows] == [
        ("b1", 1, "v-mutant-7", "container")
    ]


def test_everyone_sees_the_counts_and_the_unconfirmed_passes_only_maintainers_which_verdict_was_forged(
    client,
):
    run = confirmed_run()
    url = reverse("evaluation:run_detail", args=[run.pk])

    public = client.get(url).content.decode()
    assert 'id="run-confirmation"' in public
    assert '<tr data-confirmation="confirmed"><th scope="row">Confirmed' in public
    for kind, n in (("confirmed", 2), ("unconfirmed", 1), ("forged", 1)):
        row = public.split(f'<tr data-confirmation="{kind}">', 1)[1].split("</tr>", 1)[0]
        assert f'<td class="num">{n}</td>' in row, kind
    assert '33.3% <span class="muted">(1 of 3)</span>' in public
    unconfirmed = public.split('id="unconfirmed-passes"', 1)[1].split("</table>", 1)[0]
    assert "<code>a2</code>" in unconfirmed and "<code>a1</code>" not in unconfirmed
    assert "<strong>1</strong> verdict forged; maintainers see which completions" in public
    assert "v-mutant-7" not in public and 'id="forged-verdicts"' not in public
    assert FORGED_REDACTED in public  # the error list's reason, not the variant

    client.force_login(UserFactory())
    assert "v-mutant-7" not in client.get(url).content.decode()

    client.force_login(MaintainerFactory())
    maintainer = client.get(url).content.decode()
    forged = maintainer.split('id="forged-verdicts"', 1)[1].split("</table>", 1)[0]
    assert "(shown to maintainers only)" in forged
    assert "<code>b1</code>" in forged and "<code>v-mutant-7</code>" in forged and "container" in forged
    assert "test_forward passed" in forged
    assert FORGED_REDACTED not in maintainer


def test_imported_results_say_their_confirmation_is_not_measured(client):
    release = make_release()
    snippets = {"P": list(release.entries.get(task_version__task__key="alpha").task_version.snippets.all())}
    run = make_run(snippets, {"P": "P F"}, release=release, source=EvaluationRun.Source.IMPORTED)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    section = page.split('id="run-confirmation"', 1)[1].split("</section>", 1)[0]
    assert "Not measured: results imported from the paper hold verdicts without code" in section
    assert 'id="confirmation-counts"' not in section
    assert run_confirmation(run=run, viewer=None).forging_rate is None


def test_a_run_without_a_confirmed_or_forged_pass_has_no_rate_and_says_why(client):
    release = make_release()
    run = EvaluationRunFactory(release=release)
    a1 = release.entries.get(task_version__task__key="alpha").task_version.snippets.get(name="a1")
    record_verdicts(
        run, [(a1, 0, confirmation_verdict("unconfirmed")), (a1, 1, confirmation_verdict("plain"))]
    )
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    rate = page.split('<tr data-confirmation="rate">', 1)[1].split("</tr>", 1)[0]
    assert (
        '<span aria-hidden="true" title="not measured: no pass of this run was confirmed or forged">—</span>'
        in rate
    )
    assert (
        '<span class="visually-hidden">not measured: no pass of this run was confirmed or forged</span>'
        in rate
    )


def rejudge(completion: Completion, kind: str, **kwargs) -> TestResult:
    TestResult.objects.filter(completion=completion).update(rejudge_requested_at=timezone.now())
    return test_result_rejudge_record(
        completion_id=completion.pk, verdict=confirmation_verdict(kind, **kwargs), worker_host="judge"
    )


def test_a_re_judge_records_its_own_confirmation_and_a_forged_one_becomes_the_verdict_of_record(client):
    run = confirmed_run()
    agreed = rejudge(item(run, "a1", 0), "confirmed", variant="v-expected-9", slate="fresh")
    assert (agreed.rejudge_agreed, agreed.rejudge_confirmation, agreed.rejudge_variant) == (
        True,
        "confirmed",
        "v-expected-9",
    )
    assert (agreed.confirmation, agreed.variant) == ("confirmed", "v-expected-1")  # the record's own

    changed = rejudge(item(run, "a1", 1), "forged", variant="v-mutant-3", slate="fresh")
    assert changed.rejudge_agreed is False
    assert (changed.category, changed.confirmation, changed.variant, changed.rejudge_variant) == (
        "verdict_forged",
        "forged",
        "v-mutant-3",
        "v-mutant-3",
    )
    c = run_confirmation(run=run, viewer=None)
    assert (c.confirmed, c.forged, c.forged_rows) == (1, 2, None)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    rejudged = page.split('id="run-rejudge"', 1)[1].split("</section>", 1)[0]
    assert "v-mutant-3" not in rejudged and FORGED_REDACTED in rejudged
