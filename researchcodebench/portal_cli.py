"""``rcb download`` and ``rcb submit``: a model developer's two calls to the portal.

    rcb download RELEASE --portal URL [--output DIR] [--sha256 HEX]
    rcb submit PREDICTIONS --portal URL --release R --model KEY [--model-name NAME]
               [--template T] [--no-paper] [--wait] [--poll S] [--wait-timeout S]

``download`` fetches ``/releases/<RELEASE>/download/`` (a gzipped tar of the release's pset folder under
``<RELEASE>/``), checks its SHA-256 against the ``Repr-Digest`` header the portal sends (and ``--sha256``
when given), and unpacks it safely into ``DIR`` (default ``./RELEASE``): only regular files and folders
under ``<RELEASE>/``, no absolute path, no ``..``, no link of any kind, no device (tarfile's ``data``
filter as well). The folder is written beside ``DIR`` and renamed into place, so a failed download leaves
nothing half-unpacked.

``submit`` posts the file to ``/api/v1/runs/upload/`` (docs/predictions.md) with the personal API token in
``RCB_TOKEN`` and an ``Idempotency-Key`` derived from the file's SHA-256 and the upload's fields, so a
retried submit of the same file starts one run (the portal answers the first run again). It asks to be
answered at once (``Prefer: respond-async``): the portal stores the file and answers 202, a worker checks
it, and ``submit`` asks for the upload until it says which run it started, or every error; a portal that
answers the run itself (201) is taken as it answers. The template and
paper setting default to what ``rcb generate`` wrote on the file's lines. ``--wait`` polls
``/api/v1/runs/<id>/`` until the run is final, then prints its score from the leaderboard API.

Every call trusts the certificate authorities of the file ``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE`` or
``SSL_CERT_FILE`` names (the first set), so the client works behind a TLS proxy whose CA is in the system's
bundle; with none set, requests' own bundle.

``submit`` needs a personal API token in ``RCB_TOKEN``: a signed-in user makes one on the portal's page
``/accounts/tokens/``. Every error is one line of words: a release the portal lacks, a refused token (with
where to make one), a portal that cannot be reached and why, never the portal's HTML page.

Exit status: 0 done, 1 the run did not finish (failed, cancelled, timed out waiting), 2 bad input or a
refused request, 3 the portal could not be reached.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import requests

from .errors import EXIT_INFRASTRUCTURE, CliError
from .problems import DEFAULT_TEMPLATE, TEMPLATES
from .pset import PsetError, read_pset

TOKEN_VARIABLE = "RCB_TOKEN"
FINAL_STATUSES = ("finished", "failed", "cancelled")
CHUNK = 1 << 20


#: where the certificate authorities to trust are named, first found wins: requests' own variables, then
#: OpenSSL's, which requests ignores (it trusts certifi's bundle instead), so behind a TLS proxy whose CA
#: only the system bundle holds (``SSL_CERT_FILE``) every call failed certificate verification
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")


def ca_bundle() -> str | bool:
    """The ``verify`` of every call to the portal: the first CA file ``CA_VARIABLES`` name, else True
    (requests' default bundle)."""
    return next((os.environ[name] for name in CA_VARIABLES if os.environ.get(name)), True)


def _url(portal: str, path: str) -> str:
    return portal.rstrip("/") + path


#: how long ``submit`` waits for the portal to check a file it answered 202 for
UPLOAD_CHECK_TIMEOUT_S = 600.0


#: the portal's page where a signed-in user makes a personal API token
TOKEN_PAGE = "/accounts/tokens/"


def _portal_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _one_line(text: str, limit: int = 300) -> str:
    return " ".join(text.split())[:limit]


def _refused(response: requests.Response, what: str) -> CliError:
    """One line for an answer that is not the one asked for: a refused token says where to make one, the
    portal's own words when it sent JSON, else the status alone (never an HTML page)."""
    status = f"HTTP {response.status_code}{' ' + response.reason if response.reason else ''}"
    try:
        body = response.json()
        errors = (body.get("errors") or [body.get("detail")]) if isinstance(body, dict) else []
        detail = _one_line("; ".join(str(e) for e in errors if e))
    except ValueError:
        detail = ""
    if response.status_code in (401, 403):
        portal = _portal_of(response.url or what.split(" ", 1)[-1])
        return CliError(
            f"the portal refused the token in {TOKEN_VARIABLE} ({status}{': ' + detail if detail else ''}); "
            f"make a token at {portal}{TOKEN_PAGE}"
        )
    return CliError(f"{what}: {status}{': ' + detail if detail else ''}")


def _unreachable(url: str, exc: requests.RequestException) -> CliError:
    """One line for a request that got no answer: the portal, and why in words."""
    if isinstance(exc, requests.exceptions.SSLError):
        why = (
            "its certificate is not trusted (name the CA file in REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE or "
            "SSL_CERT_FILE)"
        )
    elif isinstance(exc, requests.exceptions.Timeout):
        why = "no answer in time (--timeout)"
    else:
        found = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", str(exc))
        why = found.group(1).strip().lower() if found else "the connection failed"
    return CliError(f"cannot reach the portal at {_portal_of(url)}: {why}", status=EXIT_INFRASTRUCTURE)


def expected_digest(header: str | None) -> str | None:
    """The hex SHA-256 of a ``Repr-Digest: sha-256=:BASE64:`` header, or None when it names none."""
    for part in (header or "").split(","):
        name, _, value = part.strip().partition("=")
        if name.lower() == "sha-256" and value.startswith(":") and value.endswith(":"):
            try:
                return base64.b64decode(value[1:-1], validate=True).hex()
            except ValueError:
                return None
    return None


def safe_members(tar: tarfile.TarFile, top: str) -> list[tarfile.TarInfo]:
    """Every member of ``tar`` when each is a regular file or folder at ``top`` or under it, with no
    absolute path and no ``..``; ``CliError`` naming the first that is not."""
    members = tar.getmembers()
    for member in members:
        parts = member.name.split("/")
        if member.name.startswith("/") or ".." in parts or parts[0] != top or "\\" in member.name:
            raise CliError(f"the archive holds {member.name!r}, outside {top}/: refused")
        if not (member.isfile() or member.isdir()):
            raise CliError(f"the archive holds {member.name!r}, which is not a plain file or folder: refused")
    return members


def run_download(args: argparse.Namespace, *, stderr: TextIO | None = None) -> int:
    stderr = stderr or sys.stderr
    release = args.release
    target = Path(args.output or release).resolve()
    if target.exists():
        raise CliError(f"{target} exists: choose a new --output folder")
    url = _url(args.portal, f"/releases/{release}/download/")
    digest = hashlib.sha256()
    with tempfile.TemporaryDirectory(prefix=".rcb-download-", dir=target.parent) as tmp:
        archive = Path(tmp) / f"{release}.tar.gz"
        try:
            with requests.get(url, stream=True, timeout=args.timeout, verify=ca_bundle()) as response:
                if response.status_code == 404:
                    raise CliError(
                        f"the portal has no release {release!r} ({url} answered HTTP 404); "
                        "its releases are listed at " + _url(args.portal, "/releases/")
                    )
                if response.status_code != 200:
                    raise _refused(response, f"GET {url}")
                expected = expected_digest(response.headers.get("Repr-Digest"))
                with open(archive, "wb") as out:
                    for chunk in response.iter_content(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        except requests.RequestException as exc:
            raise _unreachable(url, exc) from exc
        got = digest.hexdigest()
        wanted = [
            (h, src) for h, src in ((args.sha256, "--sha256"), (expected, "the portal's Repr-Digest")) if h
        ]
        if not wanted:
            raise CliError(f"GET {url}: the portal sent no Repr-Digest and no --sha256 was given: refused")
        for hexdigest, source in wanted:
            if got != hexdigest.lower():
                raise CliError(f"the archive's SHA-256 is {got}, not {hexdigest} ({source}): refused")
        unpacked = Path(tmp) / "unpacked"
        try:
            with tarfile.open(archive, mode="r:gz") as tar:
                members = safe_members(tar, release)
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(unpacked, members=members, filter="data")
                else:
                    # Before 3.10.12 tarfile has no filters; safe_members alone then keeps the archive in.
                    tar.extractall(unpacked, members=members)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise CliError(f"{url}: not a readable release archive: {exc}") from exc
        try:
            pset = read_pset(unpacked / release)
        except PsetError as exc:
            raise CliError(f"the archive is not a pset folder: {exc}") from exc
        shutil.move(unpacked / release, target)
    snippets = sum(len(t.snippets) for t in pset.tasks)
    stderr.write(f"release {release}: sha256 {got} checked\n")
    print(f"{target}: {len(pset.tasks)} tasks, {snippets} snippets")
    return 0


def file_settings(data: bytes) -> dict[str, Any]:
    """The ``template`` and ``with_paper`` that ``rcb generate`` wrote on the file's first line (if any)."""
    for raw in data.splitlines():
        if raw.strip():
            try:
                line = json.loads(raw)
            except ValueError:
                return {}
            return {k: line[k] for k in ("template", "with_paper") if isinstance(line, dict) and k in line}
    return {}


def idempotency_key(data: bytes, fields: dict[str, str]) -> str:
    """``rcb-`` and the SHA-256 of the file's SHA-256 and the upload's fields: the same file submitted the
    same way always gets the same key, another file or setting another key."""
    material = json.dumps({"file_sha256": hashlib.sha256(data).hexdigest(), **fields}, sort_keys=True)
    return "rcb-" + hashlib.sha256(material.encode()).hexdigest()


def _board_score(args: argparse.Namespace, run: dict[str, Any]) -> dict[str, Any] | None:
    params = {"release": run.get("release") or "", "template": run["template"]}
    params["paper"] = "with" if run["with_paper"] else "without"
    response = requests.get(
        _url(args.portal, "/api/v1/leaderboard/"), params=params, timeout=args.timeout, verify=ca_bundle()
    )
    if response.status_code != 200:
        return None
    return next((row for row in response.json().get("results", []) if row.get("run_id") == run["id"]), None)


#: seconds a finished run may take to reach the board (the portal shows a result within 10 s under load)
BOARD_LAG_S = 30.0


def _board_row(args: argparse.Namespace, run: dict[str, Any]) -> dict[str, Any] | None:
    """The finished run's board row, asked again every ``--poll`` seconds while the board catches up (at most
    ``BOARD_LAG_S``); None if it never shows."""
    deadline = time.monotonic() + BOARD_LAG_S
    while True:
        row = _board_score(args, run)
        if (row is not None and row.get("scaled_pass_at_1") is not None) or time.monotonic() >= deadline:
            return row
        time.sleep(args.poll)


def _checked_run(
    args: argparse.Namespace, receipt: dict[str, Any], token: str, stderr: TextIO
) -> dict[str, Any]:
    """The run of an upload the portal answered 202 (``Prefer: respond-async``): its receipt asked for again,
    sooner at first, until a worker has checked the file; a refusal is a ``CliError`` with every error."""
    deadline = time.monotonic() + UPLOAD_CHECK_TIMEOUT_S
    delay = 0.2
    while receipt["status"] == "received":
        if time.monotonic() >= deadline:
            raise CliError(
                f"upload {receipt['id']} was not checked within {UPLOAD_CHECK_TIMEOUT_S:g} s; ask for it at "
                f"{receipt['url']}"
            )
        time.sleep(delay)
        delay = min(delay * 2, args.poll)
        response = requests.get(
            receipt["url"],
            headers={"Authorization": f"Token {token}"},
            timeout=args.timeout,
            verify=ca_bundle(),
        )
        if response.status_code != 200:
            raise _refused(response, f"GET {receipt['url']}")
        receipt = response.json()
    if receipt["status"] != "started":
        # "refused" (the file's problems) or "failed" (the portal's own; sending it again later may work)
        raise CliError(f"upload {receipt['id']} {receipt['status']}: " + "; ".join(receipt["errors"]))
    stderr.write(f"upload {receipt['id']} checked\n")
    return receipt["run"]


def _wait(args: argparse.Namespace, run_id: int, token: str, stderr: TextIO) -> dict[str, Any]:
    """The run, asked every ``--poll`` seconds until it is final. With the token, so that each answer is the
    run as it is now (a client without one shares a copy a few seconds old)."""
    url = _url(args.portal, f"/api/v1/runs/{run_id}/")
    deadline = time.monotonic() + args.wait_timeout
    last = None
    while True:
        response = requests.get(
            url, headers={"Authorization": f"Token {token}"}, timeout=args.timeout, verify=ca_bundle()
        )
        if response.status_code != 200:
            raise _refused(response, f"GET {url}")
        run = response.json()
        if run["status"] != last:
            stderr.write(f"run {run_id}: {run['status']}\n")
            last = run["status"]
        if run["status"] in FINAL_STATUSES or time.monotonic() >= deadline:
            return run
        time.sleep(args.poll)


def run_submit(args: argparse.Namespace, *, stderr: TextIO | None = None) -> int:
    stderr = stderr or sys.stderr
    token = os.environ.get(TOKEN_VARIABLE)
    if not token:
        raise CliError(
            f"set {TOKEN_VARIABLE} to your personal API token (make one at "
            f"{_url(args.portal, TOKEN_PAGE)} when signed in)"
        )
    try:
        data = Path(args.predictions).read_bytes()
    except OSError as exc:
        raise CliError(f"{args.predictions}: {exc.strerror}") from exc
    written = file_settings(data)
    template = args.template or written.get("template") or DEFAULT_TEMPLATE
    with_paper = False if args.no_paper else bool(written.get("with_paper", True))
    fields = {
        "model": args.model,
        "release": args.release,
        "template": template,
        "with_paper": "true" if with_paper else "false",
    }
    if args.model_name:
        fields["model_name"] = args.model_name
    key = idempotency_key(data, fields)
    url = _url(args.portal, "/api/v1/runs/upload/")
    headers = {"Authorization": f"Token {token}", "Idempotency-Key": key, "Prefer": "respond-async"}
    files = {"file": (Path(args.predictions).name, data, "application/jsonl")}
    try:
        response = requests.post(
            url, data=fields, files=files, headers=headers, timeout=args.timeout, verify=ca_bundle()
        )
        if response.status_code not in (200, 201, 202):
            raise _refused(response, f"POST {url}")
        upload = response.json()
        if response.headers.get("Preference-Applied", "").lower() == "respond-async":
            upload = _checked_run(args, upload, token, stderr)
    except requests.RequestException as exc:
        raise _unreachable(url, exc) from exc
    again = " (this file was submitted before: the same run)" if response.status_code == 200 else ""
    stderr.write(
        f"run {upload['id']}: {upload['items']} completions, {upload['coverage']['covered_snippets']}/"
        f"{upload['coverage']['release_snippets']} snippets of release {args.release}{again}\n"
    )
    if not args.wait:
        print(upload["url"])
        return 0
    try:
        run = _wait(args, upload["id"], token, stderr)
        row = _board_row(args, run) if run["status"] == "finished" else None
    except requests.RequestException as exc:
        raise _unreachable(upload["url"], exc) from exc
    print(upload["url"])
    if run["status"] != "finished":
        print(f"status: {run['status']}{': ' + run['status_reason'] if run.get('status_reason') else ''}")
        return 1
    if row is None or row.get("scaled_pass_at_1") is None:
        print("score: not on the board (see the run page)")
    else:
        print(f"Scaled Pass@1: {row['scaled_pass_at_1']:.2f}  Pass@1: {row['pass_at_1']:.2f}")
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "download",
        help="fetch a release's task folders from a portal, check its hash, unpack it safely",
        description="Download RELEASE as a pset folder (papers.yaml + task folders).",
    )
    p.add_argument("release", metavar="RELEASE", help="the release name")
    p.add_argument("--portal", required=True, metavar="URL", help="the portal, e.g. https://rcb.example.org")
    p.add_argument("--output", "-o", metavar="DIR", help="the folder to create (default ./RELEASE)")
    p.add_argument("--sha256", metavar="HEX", help="the archive's expected SHA-256, checked as well")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    p.set_defaults(handler=run_download)

    p = subparsers.add_parser(
        "submit",
        help="upload a predictions file to a portal as a run (RCB_TOKEN: your API token)",
        description="Upload PREDICTIONS to the portal; a retried submit of the same file starts one run.",
    )
    p.add_argument("predictions", metavar="PREDICTIONS", help="predictions JSONL (docs/predictions.md)")
    p.add_argument("--portal", required=True, metavar="URL", help="the portal, e.g. https://rcb.example.org")
    p.add_argument("--release", required=True, help="the release the file answers")
    p.add_argument("--model", required=True, metavar="KEY", help="the model's key on the portal")
    p.add_argument("--model-name", help="display name: creates your self-reported model when KEY is new")
    p.add_argument(
        "--template", choices=TEMPLATES, help="the prompt template (default: the file's, else rcb-v2)"
    )
    p.add_argument("--no-paper", action="store_true", help="the answers were made without the paper")
    p.add_argument("--wait", action="store_true", help="wait for the run to finish and print its score")
    p.add_argument("--poll", type=float, default=5.0, help="seconds between status checks (default 5)")
    p.add_argument("--wait-timeout", type=float, default=3600.0, help="give up waiting after (default 3600)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    p.set_defaults(handler=run_submit)
