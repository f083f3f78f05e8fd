"""Request body caps checked before anything reads the body (docs in README, Configuration).

Django reads a body only when a view or middleware asks for ``request.POST`` or ``request.FILES``, but the
CSRF check asks for it on every unsafe request, so without a cap an anonymous client could make any web
process spool a file part of any size to ``FILE_UPLOAD_TEMP_DIR`` before the answer. Here the declared
``Content-Length`` is compared first: an anonymous request may send ``RCB_ANONYMOUS_REQUEST_MAX_BYTES``
(sign-in and sign-up forms need a few hundred), a signed-in one (session or an ``Authorization`` header, which
DRF checks before it reads the body) ``RCB_REQUEST_MAX_BYTES`` (the largest upload or contributed archive
plus room for the form). Larger bodies get 413 without a byte of them read. A request without a
``Content-Length`` (chunked) has an empty body under WSGI, so it cannot get past the cap either. The reverse
proxy of compose.yaml applies the same large cap in front of the web server.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve


class BodySizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        declared = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(declared)
        except ValueError:
            length = -1
        if length < 0:
            return HttpResponse(
                f"Content-Length {declared[:40]!r} is not a number of bytes\n",
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        if length > settings.RCB_ANONYMOUS_REQUEST_MAX_BYTES:
            signed_in = "HTTP_AUTHORIZATION" in request.META or get_user(request).is_authenticated
            cap = settings.RCB_REQUEST_MAX_BYTES if signed_in else settings.RCB_ANONYMOUS_REQUEST_MAX_BYTES
            if length > cap:
                who = "" if signed_in else " without signing in"
                return HttpResponse(
                    f"Request body too large: {length} bytes, at most {cap}{who} (RCB_REQUEST_MAX_BYTES, "
                    "RCB_ANONYMOUS_REQUEST_MAX_BYTES)\n",
                    status=413,
                    content_type="text/plain; charset=utf-8",
                )
        return self.get_response(request)


def _form_page(path: str) -> str:
    """The nearest address above ``path`` that is a route of the site ("" for none): the page a form-only
    address belongs to (``/contribute/5/review/`` -> ``/contribute/5/``)."""
    parts = path.rstrip("/").split("/")
    while len(parts) > 1:
        parts.pop()
        candidate = "/".join(parts) + "/"
        try:
            resolve(candidate)
        except Resolver404:
            continue
        return candidate
    return ""


class MethodNotAllowedPageMiddleware:
    """A page for 405: a view limited to some methods (``require_POST``) answers an empty 405, which a
    browser shows blank when a form's address is reloaded. Outside the API (``/api/``, whose clients read
    the status and the ``Allow`` header), an empty 405 becomes ``405.html``: what the address is for and a
    link to the page with the form. Status and ``Allow`` are kept."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or request.path.startswith("/api/") or response.content:
            return response
        allowed = [m.strip() for m in response.get("Allow", "").split(",") if m.strip()]
        page = render(
            request,
            "405.html",
            {"allowed": allowed or ["POST"], "page_url": _form_page(request.path)},
            status=405,
        )
        if "Allow" in response:
            page["Allow"] = response["Allow"]
        return page


class ApiNulCharacterMiddleware:
    """No text the API reads may hold a NUL character (U+0000): PostgreSQL cannot store one, and a lookup
    with it fails in the database (a 500) before any field would refuse it. Under ``/api/v1/`` a path
    holding one names nothing (a JSON 404); a query parameter holding one, in its name or value, is a JSON
    400 naming it. (A body's fields are DRF's: its ``CharField`` already refuses NUL with a 400.)"""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith("/api/v1/"):
            if "\x00" in request.path_info:
                return JsonResponse({"detail": "Not found."}, status=404)
            bad = sorted({k for k, values in request.GET.lists() for v in (k, *values) if "\x00" in v})
            if bad:
                message = ["must not contain a NUL character (U+0000)."]
                return JsonResponse({name.replace("\x00", "\\u0000"): message for name in bad}, status=400)
        return self.get_response(request)
