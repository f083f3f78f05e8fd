"""Predictions uploads as their submitter or a maintainer sees them."""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser

from contributions.roles import can_maintain
from evaluation.models import PredictionsUpload


def upload_for_viewer(
    *, upload_id: int, viewer: AbstractBaseUser | AnonymousUser
) -> PredictionsUpload | None:
    """The upload ``upload_id`` when ``viewer`` submitted it or maintains the portal, else None (whether it
    exists is theirs to know), with its run."""
    uploads = PredictionsUpload.objects.select_related("run", "run__release").defer("data")
    if not can_maintain(viewer):
        uploads = uploads.filter(requester_id=viewer.pk)
    return uploads.filter(pk=upload_id).first()
