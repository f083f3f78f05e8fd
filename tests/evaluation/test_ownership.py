"""Who may upload predictions for which model, and who sees who asked for a run.

Published models (imported with the paper) are locked; maintainer-managed models (created on the staff
pages) take uploads only from staff and granted members; a self-reported model (created by a member's
upload) takes its owner's. Every refusal is an error on the model field, through the form and the API
alike, and stores nothing. Run pages and the runs API show the requester only to the requester and staff.
"""

from __future__ import annotations

import importlib
import re

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.models import EvaluationRun, LanguageModel
from evaluation.services.published import published_import
from leaderboard.services import leaderboard_refresh_run
from tests.evaluation.published_helpers import small_fixture
from tests.factories import (
    EvaluationRunFactory,
    LanguageModelFactory,
    StaffUserFactory,
    UserFactory,
    full_predictions,
    make_benchmark,
    make_run,
)
from tests.factories.builders import token_api

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_throttle_cache")]

PUBLISHED = LanguageModel.Management.PUBLISHED
MAINTAINER = LanguageModel.Management.MAINTAINER
SELF_REPORTED = LanguageModel.Management.SELF_REPORTED


@pytest.fixture
def member():
    return UserFactory(username="member")


@pytest.fixture
def staff():
    return StaffUserFactory(username="maintainer")


def post_form(client, user, **fields):
    """The upload form as ``user``: every field the form has, ``fields`` overriding."""
    client.force_login(user)
    form = {"model": "", "new_model_key": "", "new_model_name": "", "release": "r1", "template": "rcb-v2"}
    return client.post(
        "/runs/upload/", {**form, **fields, "file": SimpleUploadedFile("p.jsonl", full_predictions())}
    )


def post_api(user, **fields):
    """The upload API with ``user``'s token."""
    api = token_api(user)
    payload = {"release": "r1", "file": SimpleUploadedFile("p.jsonl", full_predictions()), **fields}
    return api.post("/api/v1/runs/upload/", payload, format="multipart")


def model_field_errors(response) -> list[str]:
    """The messages the upload form put on its model field (an upload refused for the model)."""
    return [str(e) for e in response.context["form"].errors.get("model", [])]


def staff_adds_model(client, staff, key: str) -> LanguageModel:
    client.force_login(staff)
    response = client.post(
        "/runs/models/add/",
        {"key": key, "name": key.title(), "provider": "other", "max_concurrency": 1, "active": "on"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    client.logout()
    return LanguageModel.objects.get(key=key)


# --- refused: published, maintainer-managed, another member's -------------------------------------------


def test_form_refuses_a_published_model_with_an_error_on_the_model_field_and_stores_nothing(
    client, member, release
):
    LanguageModelFactory(key="GPT_4O", management=PUBLISHED)
    response = post_form(client, member, model="GPT_4O")
    assert response.status_code == 400
    assert model_field_errors(response) == [
        "'GPT_4O' holds the results published with the paper and is locked; upload under a new model key "
        "instead."
    ]
    assert not EvaluationRun.objects.exists()


def test_api_refuses_a_published_model_naming_why_and_stores_nothing(member, release):
    LanguageModelFactory(key="GPT_4O", management=PUBLISHED)
    response = post_api(member, model="GPT_4O")
    assert response.status_code == 400
    assert response.json() == {
        "errors": [
            "model: 'GPT_4O' holds the results published with the paper and is locked; upload under a new "
            "model key instead"
        ]
    }
    assert not EvaluationRun.objects.exists()


def test_a_published_model_is_locked_for_staff_too(staff, release):
    LanguageModelFactory(key="GPT_4O", management=PUBLISHED)
    response = post_api(staff, model="GPT_4O")
    assert response.status_code == 400 and "published with the paper" in response.json()["errors"][0]
    assert not EvaluationRun.objects.exists()


def test_form_and_api_refuse_another_members_model(client, member, release):
    LanguageModelFactory(key="theirs", self_reported=True, owner=UserFactory(username="other"))
    response = post_form(client, member, model="theirs")
    assert response.status_code == 400
    assert model_field_errors(response) == [
        "'theirs' belongs to another user; upload under a new model key, or ask its owner to have a "
        "maintainer grant you upload rights."
    ]
    response = post_api(member, model="theirs")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "model: 'theirs' belongs to another user; upload under a new model key, or ask its owner to have a "
        "maintainer grant you upload rights"
    ]
    assert not EvaluationRun.objects.exists()


def test_form_and_api_refuse_a_staff_created_model_to_a_member(client, staff, member, release):
    model = staff_adds_model(client, staff, "portal-model")
    assert model.management == MAINTAINER and model.owner is None
    response = post_form(client, member, model="portal-model")
    assert response.status_code == 400
    assert model_field_errors(response) == [
        "'portal-model' is managed by the maintainers (the portal generates its completions); upload "
        "under a new model key, or ask a maintainer to grant you upload rights."
    ]
    response = post_api(member, model="portal-model")
    assert response.status_code == 400
    assert response.json()["errors"][0].startswith("model: 'portal-model' is managed by the maintainers")
    assert not EvaluationRun.objects.exists()


def test_a_refused_model_is_reported_together_with_the_files_errors(client, member, release):
    LanguageModelFactory(key="GPT_4O", management=PUBLISHED)
    client.force_login(member)
    response = client.post(
        "/runs/upload/",
        {"model": "GPT_4O", "release": "r1", "template": "rcb-v2", "file": SimpleUploadedFile("p", b"{\n")},
    )
    assert response.status_code == 400
    assert "published with the paper" in model_field_errors(response)[0]
    assert "line 1: not valid JSON" in response.content.decode()


# --- accepted: own, granted, staff ---------------------------------------------------------------------


def test_form_and_api_accept_the_members_own_model(client, member, release):
    model = LanguageModelFactory(key="mine", self_reported=True, owner=member)
    response = post_form(client, member, model="mine")
    assert response.status_code == 302
    assert post_api(member, model="mine").status_code == 201
    assert list(EvaluationRun.objects.values_list("model", "requester")) == [(model.pk, member.pk)] * 2


def test_staff_grants_upload_rights_on_the_model_page_and_the_member_may_upload(
    client, staff, member, release
):
    model = staff_adds_model(client, staff, "portal-model")
    assert post_api(member, model="portal-model").status_code == 400
    client.force_login(staff)
    edit = client.get(f"/runs/models/{model.pk}/edit/")
    fields = {k: v for k, v in edit.context["form"].initial.items() if v is not None}
    response = client.post(
        f"/runs/models/{model.pk}/edit/", {**fields, "active": "on", "uploaders": [member.pk]}
    )
    assert response.status_code == 302
    assert list(model.uploaders.all()) == [member]
    assert model.management == MAINTAINER
    assert post_form(client, member, model="portal-model").status_code == 302
    assert post_api(member, model="portal-model").status_code == 201
    assert EvaluationRun.objects.filter(model=model, requester=member).count() == 2


def test_a_grant_on_another_members_model_lets_the_grantee_upload(client, member, release):
    model = LanguageModelFactory(key="theirs", self_reported=True, owner=UserFactory(username="other"))
    model.uploaders.add(member)
    assert post_api(member, model="theirs").status_code == 201


def test_the_grant_field_lists_members_only_and_is_staff_only(client, staff, member):
    model = LanguageModelFactory(key="portal-model")
    client.force_login(member)
    assert client.get(f"/runs/models/{model.pk}/edit/").status_code == 403
    client.force_login(staff)
    html = client.get(f"/runs/models/{model.pk}/edit/").content.decode()
    select = re.search(r'<select name="uploaders".*?</select>', html, re.S).group(0)
    assert ">member<" in select and ">maintainer<" not in select


def test_staff_may_upload_for_a_maintainer_model(client, staff, release):
    staff_adds_model(client, staff, "portal-model")
    assert post_api(staff, model="portal-model").status_code == 201


# --- a new key: the member's self-reported model --------------------------------------------------------


def test_a_new_key_creates_the_members_self_reported_model(client, member, release):
    response = post_api(member, model="my-model", model_name="My Model")
    assert response.status_code == 201
    model = LanguageModel.objects.get(key="my-model")
    assert model.management == SELF_REPORTED and model.owner == member
    # ... which the member may upload for again, and another member may not.
    assert post_form(client, member, model="my-model").status_code == 302
    assert post_api(UserFactory(username="other"), model="my-model").status_code == 400


def test_a_new_model_from_the_form_is_self_reported_on_its_model_and_run_pages(client, member, release):
    response = post_form(client, member, new_model_key="my-model", new_model_name="My Model")
    assert response.status_code == 302
    assert LanguageModel.objects.get(key="my-model").owner == member
    client.logout()
    page = client.get(reverse("leaderboard:model", args=["my-model"])).content.decode()
    assert re.search(r"<h1>My Model <span[^>]*>self-reported</span></h1>", page)
    assert "self-reported model" in client.get(response["Location"]).content.decode()


def test_the_board_marks_self_reported_models_and_only_them(client):
    rel, snippets = make_benchmark({"p1": (None, [2, 3])})
    for key, management in (("USERS", SELF_REPORTED), ("PORTALS", MAINTAINER)):
        run = make_run(snippets, {"p1": "P F"}, release=rel, model__key=key, model__management=management)
        leaderboard_refresh_run(run=run)
    html = client.get(reverse("leaderboard:board")).content.decode()
    rows = dict(re.findall(r'<tr[^>]*data-model="(\w+)">(.*?)</tr>', html, re.S))
    assert set(rows) == {"USERS", "PORTALS"}
    assert ">self-reported</span>" in rows["USERS"] and "self-reported" not in rows["PORTALS"]


# --- published import and the migration of existing models ----------------------------------------------


def test_the_published_import_creates_published_models_and_locks_a_claimed_key(tmp_path, member):
    LanguageModelFactory(key="OTHER", name="Claimed", self_reported=True, owner=member)
    published_import(source=small_fixture(tmp_path))
    management = dict(LanguageModel.objects.values_list("key", "management"))
    assert management == {"ACME_HIGH": PUBLISHED, "ACME_LOW": PUBLISHED, "OTHER": PUBLISHED}


def test_the_migration_locks_models_with_only_imported_runs_and_keeps_others_maintained():
    migration = importlib.import_module("evaluation.migrations.0003_language_model_ownership")
    imported = EvaluationRunFactory(source=EvaluationRun.Source.IMPORTED).model
    mixed = EvaluationRunFactory(source=EvaluationRun.Source.IMPORTED).model
    EvaluationRunFactory(model=mixed, source=EvaluationRun.Source.UPLOADED)
    uploaded = EvaluationRunFactory(source=EvaluationRun.Source.UPLOADED).model
    no_runs = LanguageModelFactory()
    migration.classify_existing_models(apps, None)
    management = dict(LanguageModel.objects.values_list("pk", "management"))
    assert management == {
        imported.pk: PUBLISHED,
        mixed.pk: MAINTAINER,
        uploaded.pk: MAINTAINER,
        no_runs.pk: MAINTAINER,
    }


# --- who asked for a run --------------------------------------------------------------------------------


@pytest.fixture
def requested_run(member):
    return EvaluationRunFactory(requester=member, source=EvaluationRun.Source.UPLOADED)


def run_views(client, run, user=None):
    """The run page and the runs API (list and detail) as ``user`` (None: anonymous)."""
    client.logout()
    if user is not None:
        client.force_login(user)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    listed = client.get("/api/v1/runs/").json()["results"]
    detail = client.get(f"/api/v1/runs/{run.pk}/").json()
    return page, [r["requester"] for r in listed], detail["requester"]


@pytest.mark.parametrize("who", ["anonymous", "another member"])
def test_the_public_and_other_members_see_no_requester(client, requested_run, who):
    user = UserFactory(username="someone") if who == "another member" else None
    page, listed, detail = run_views(client, requested_run, user)
    assert "Requested by" not in page and ">member<" not in page
    assert listed == [None] and detail is None


@pytest.mark.parametrize("who", ["requester", "staff"])
def test_the_requester_and_staff_see_the_requester(client, requested_run, member, staff, who):
    page, listed, detail = run_views(client, requested_run, member if who == "requester" else staff)
    assert "<dt>Requested by</dt><dd>member</dd>" in page
    assert listed == ["member"] and detail == "member"


def test_the_runs_api_reads_every_shown_field_in_the_same_queries_whatever_the_number_of_runs(
    client, member, staff
):
    """The runs API reads only the columns it shows (``evaluation.selectors.runs.RUN_API_COLUMNS``): a field shown but not
    read would cost a query per run. As staff every field is shown, the requester included."""
    client.force_login(staff)

    def queries() -> tuple[int, list[dict]]:
        with CaptureQueriesContext(connection) as ctx:
            listed = client.get("/api/v1/runs/").json()["results"]
        return len(ctx.captured_queries), listed

    EvaluationRunFactory(requester=member, source=EvaluationRun.Source.UPLOADED)
    one, _ = queries()
    for _ in range(4):
        EvaluationRunFactory(requester=member, source=EvaluationRun.Source.UPLOADED)
    five, listed = queries()
    assert one == five
    assert [r["requester"] for r in listed] == ["member"] * 5 and all(r["model"]["key"] for r in listed)
