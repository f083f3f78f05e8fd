"""Uploads answered at once and checked by a worker: the API's ``Prefer: respond-async`` (docs/api.md).

Checking a file against its release and creating its run and items takes a request tens of milliseconds of
database work, and seconds for a whole release's predictions; under load that is what a submitter waits for.
A client that says it can wait another way (``Prefer: respond-async``, RFC 7240) gets ``202 Accepted`` as
soon as the request itself is sound:

1. ``predictions_upload_receive`` (the request): the idempotency key's form, the file's size (before it is
   read), then the file stored as a ``PredictionsUpload`` with the model and settings asked for, and its
   message sent once that commits. A retry with the same key and file is the same upload.
2. ``predictions_upload_check`` (a worker, queue ``site``): under the upload's row lock, the one check and
   creation every upload goes through (``uploads.predictions_upload``), recording the run it started or
   every error, named as the synchronous API names them. A second delivery finds it checked and does
   nothing. Each check begun is counted first, in a transaction of its own, so a check that ends in an
   error of the portal's own (a bug, a fault) still counts: one past ``RCB_UPLOAD_MAX_CHECKS`` fails the
   upload, telling its submitter so, instead of trying it again for ever.
3. ``uploads_resend_waiting`` (the reaper): an upload still waiting ``RCB_UPLOAD_RESEND_S`` after its
   message was sent (a broker that lost it, or refused it, or a check that ended in an error) is sent again.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from contributions.models import Release
from evaluation import dispatch
from evaluation.models import LanguageModel, PredictionsUpload
from evaluation.services.uploads import (
    IdempotencyKeyReused,
    NewModel,
    PredictionsInvalid,
    UploadFile,
    api_error_lines,
    idempotency_key_check,
    predictions_upload,
    upload_create_once,
    upload_limits,
    upload_read,
)

log = logging.getLogger(__name__)

#: at most this many waiting uploads are sent again per pass of the reaper
RESEND_BATCH = 200


@dataclass(frozen=True)
class Received:
    """The upload a request stored, or found (``replayed``: a retry with the same key and file)."""

    upload: PredictionsUpload
    replayed: bool = False


def predictions_upload_receive(
    *,
    release: Release,
    file: UploadFile,
    requester: AbstractBaseUser,
    model_key: str,
    model_name: str = "",
    template: str | None = None,
    with_paper: bool | None = None,
    idempotency_key: str = "",
) -> Received:
    """Store an upload for a worker to check (see the module docstring). Raises ``PredictionsInvalid`` for
    a malformed ``idempotency_key`` or a file over ``RCB_UPLOAD_MAX_BYTES`` (refused from its size, before
    it is read), and ``IdempotencyKeyReused`` when the key came with another file or release."""
    key = idempotency_key
    idempotency_key_check(key)
    data = upload_read(file, field_errors={})
    # A file that did not tell its size is refused here too: nothing past the limit is stored.
    if size_error := upload_limits().size_error(len(data)):
        raise PredictionsInvalid(line_errors=[], field_errors={"file": [size_error]})
    sha256 = hashlib.sha256(data).hexdigest()

    def create() -> PredictionsUpload:
        upload = PredictionsUpload.objects.create(
            requester=requester,
            release=release,
            model_key=model_key,
            model_name=model_name,
            template=template or "",
            with_paper=with_paper,
            idempotency_key=key,
            sha256=sha256,
            data=data,
            sent_at=timezone.now(),
        )
        transaction.on_commit(lambda: dispatch.predictions_upload_check(upload.pk))
        return upload

    upload, replayed = upload_create_once(
        key=key,
        earlier=lambda: PredictionsUpload.objects.filter(requester=requester, idempotency_key=key).first(),
        matches=lambda upload: upload.sha256 == sha256 and upload.release_id == release.pk,
        reused=lambda upload: IdempotencyKeyReused(upload.run, upload=upload),
        create=create,
    )
    return Received(upload=upload, replayed=replayed)


def predictions_upload_check(*, upload_id: int) -> PredictionsUpload | None:
    """Check a received upload and start its run, or record why not (see the module docstring); an upload
    already checked, or gone, is returned as it is (None when gone)."""
    waiting = PredictionsUpload.objects.filter(pk=upload_id, status=PredictionsUpload.Status.RECEIVED)
    waiting.update(attempts=F("attempts") + 1)  # committed before the check, whatever becomes of it
    with transaction.atomic():
        upload = PredictionsUpload.objects.select_for_update().filter(pk=upload_id).first()
        if upload is None or upload.status != PredictionsUpload.Status.RECEIVED:
            return upload
        if upload.attempts > settings.RCB_UPLOAD_MAX_CHECKS:
            return _given_up(upload)
        model = LanguageModel.objects.filter(key=upload.model_key).first()
        try:
            started = predictions_upload(
                release=upload.release,
                file=ContentFile(bytes(upload.data)),
                template=upload.template or None,
                with_paper=upload.with_paper,
                requester=upload.requester,
                model=model,
                new_model=None if model else NewModel(key=upload.model_key, name=upload.model_name),
                idempotency_key=upload.idempotency_key,
            )
        except PredictionsInvalid as exc:
            upload.status, upload.errors = PredictionsUpload.Status.REFUSED, api_error_lines(exc)
        except IdempotencyKeyReused as exc:
            upload.status, upload.errors = PredictionsUpload.Status.REFUSED, [f"Idempotency-Key: {exc}"]
        else:
            upload.status, upload.run = PredictionsUpload.Status.STARTED, started.run
        _checked_save(upload)
    return upload


def _checked_save(upload: PredictionsUpload) -> None:
    """Save ``upload`` as checked, with the status, errors and run just set: its file is dropped."""
    upload.data = b""
    upload.checked_at = timezone.now()
    upload.save(update_fields=["status", "errors", "run", "data", "checked_at"])


def _given_up(upload: PredictionsUpload) -> PredictionsUpload:
    """Fail ``upload``, whose every check ended in an error of the portal's own: nothing was created."""
    checks = upload.attempts - 1
    log.error(
        "upload %s failed: its %s checks all ended in an error (the worker's log has each)", upload.pk, checks
    )
    upload.status = PredictionsUpload.Status.FAILED
    upload.errors = [
        f"file: the portal could not check this upload: its {checks} checks all ended in an error on the "
        f"portal's side, not in a problem found in the file; nothing was created. Send the file again later, "
        f"or tell the portal's maintainers (upload {upload.pk})."
    ]
    _checked_save(upload)
    return upload


def uploads_resend_waiting(*, now: datetime | None = None) -> list[int]:
    """Send again the messages of uploads waiting longer than ``RCB_UPLOAD_RESEND_S`` since their last
    (up to ``RESEND_BATCH``); returns their ids."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.RCB_UPLOAD_RESEND_S)
    waiting = list(
        PredictionsUpload.objects.filter(status=PredictionsUpload.Status.RECEIVED, sent_at__lt=stale)
        .order_by("sent_at")
        .values_list("pk", flat=True)[:RESEND_BATCH]
    )
    if waiting:
        PredictionsUpload.objects.filter(pk__in=waiting).update(sent_at=now)
        for upload_id in waiting:
            dispatch.predictions_upload_check(upload_id)
    return waiting
