"""Safe intake of contributed code: an uploaded archive or one commit of a git repository, as bytes in memory.

Contract: ``intake_archive`` and ``intake_git`` return an ``IntakeResult`` whose ``files`` map safe, normalised
'/'-relative paths to their bytes, or raise ``IntakeError`` naming the offending member, URL or limit. They
never write outside a quarantine folder: archives are read in memory, member by member, and never extracted;
a git fetch goes into a fresh folder under the quarantine root that is removed afterwards, and its files are
read from git's object store, never checked out. ``intake_write`` is the one place intake files reach disk.

What is refused, and why (docs/task-format.md describes the task folder these files become):

- member names that are absolute, hold ``..``, a backslash, a drive letter or control characters, that repeat
  (exactly, or differing only in case: the benchmark repository is cloned on case-insensitive file systems
  too), or that are both a file and a folder;
- symbolic and hard links, devices, fifos, git submodules: a task folder is plain files;
- more bytes, members or expansion than ``IntakeLimits`` allows, counted on the real decompressed bytes
  while reading (declared sizes are only used to refuse early, never trusted to accept);
- code and text files (``TEXT_SUFFIXES``) that are not UTF-8: the parser, the problem renderer and the
  reviewer all read them as UTF-8;
- files Python could load as code that nobody can review: native modules (ELF, ``.so``, ``.pyd``...) and
  zip imports (``.zip``, ``.egg``, ``.whl``). Other binary files (a small ``.npy`` the test loads) are allowed
  within the limits, as the task format allows small data.

Caches and packaging litter (``__pycache__``, ``.git``, ``__MACOSX``, ``.DS_Store``, ``*.pyc``) are dropped and
listed in ``IntakeResult.skipped``, as the task-folder reader ignores them anyway; their names are still
checked. In an archive, a single top-level folder holding every file is stripped once (an archive of a
folder); a git tree is taken as it is, since whoever names a repository and commit means its root.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import shutil
import signal
import stat
import subprocess
import tarfile
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

import git

from researchcodebench import outbound

#: files that must decode as UTF-8 (code, paper, configuration)
TEXT_SUFFIXES = (".py", ".md", ".tex", ".txt", ".yaml", ".yml", ".toml", ".cfg", ".json")
#: files Python can import code from: refused, as a reviewer cannot read them
CODE_BLOB_SUFFIXES = (".so", ".pyd", ".dll", ".dylib", ".zip", ".egg", ".whl")
#: dropped folders and files (the task-folder reader ignores them; archives of a folder often carry them)
DROPPED_FOLDERS = frozenset({"__pycache__", ".git", ".pytest_cache", "__MACOSX"})
DROPPED_NAMES = frozenset({".DS_Store"})
DROPPED_SUFFIXES = (".pyc", ".pyo")

MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255
_SHOWN_CHARS = 200
_CHUNK = 64 * 1024
#: tar headers, pax records and padding around each member (a generous bound on the stream beyond contents)
_TAR_OVERHEAD_PER_MEMBER = 4096
_TAR_OVERHEAD_FIXED = 20 * 512
_GIT_STDERR_KEPT = 64 * 1024
_GIT_SIZE_SLACK = 1024 * 1024
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
_TRANSPORT_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_DRIVE = re.compile(r"^[A-Za-z]:")


class IntakeError(ValueError):
    """Contributed code that is refused. The message names the member, URL or limit, short and bounded;
    ``field`` says which input is at fault: ``"archive"``, ``"url"`` or ``"commit"``."""

    def __init__(self, message: str, *, field: str = "archive") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class IntakeLimits:
    """Bounds on one intake. ``max_bytes`` bounds the archive, the sum of its unpacked files and a git fetch;
    ``max_ratio`` the unpacked bytes per archive byte; ``git_timeout_s`` a whole git intake."""

    max_bytes: int
    max_files: int
    max_member_bytes: int
    max_ratio: float
    git_timeout_s: float
    allow_file_urls: bool = False

    @classmethod
    def from_settings(cls) -> IntakeLimits:
        """The limits set by the ``RCB_INTAKE_*`` settings (README's configuration table)."""
        from django.conf import settings

        return cls(
            max_bytes=settings.RCB_INTAKE_MAX_BYTES,
            max_files=settings.RCB_INTAKE_MAX_FILES,
            max_member_bytes=settings.RCB_INTAKE_MAX_MEMBER_BYTES,
            max_ratio=settings.RCB_INTAKE_MAX_RATIO,
            git_timeout_s=settings.RCB_INTAKE_GIT_TIMEOUT_S,
            allow_file_urls=settings.RCB_INTAKE_ALLOW_FILE_URLS,
        )


@dataclass(frozen=True)
class IntakeResult:
    """The accepted files. ``source`` is ``"archive"`` or ``"git"``; ``origin`` the file name or URL;
    ``commit`` the full sha of a git intake; ``skipped`` the dropped litter (module docstring)."""

    files: dict[str, bytes]
    source: str
    origin: str
    commit: str | None
    skipped: tuple[str, ...] = ()


def quarantine_root() -> Path:
    """``RCB_VAR_DIR/quarantine``: the only folder intake writes to (created when missing)."""
    from django.conf import settings

    root = Path(settings.VAR_DIR) / "quarantine"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def quarantine_folder(*, root: Path, prefix: str = "intake-") -> Iterator[Path]:
    """A fresh, private folder under ``root``, removed with everything in it when the block ends."""
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def intake_write(*, files: Mapping[str, bytes], dest: Path) -> None:
    """Write intake ``files`` under ``dest`` (an empty or missing folder). Paths are checked again, and a
    file is only ever created, never followed or overwritten, so nothing lands outside ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    base = dest.resolve()
    for relpath, data in files.items():
        parts = _safe_parts(relpath, origin="intake")
        target = base.joinpath(*parts)
        if base not in target.parents:
            raise IntakeError(f"{_show(relpath)}: outside the destination folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(target, flags, 0o644), "wb") as handle:
            handle.write(data)


# --- names, limits and the collected files ----------------------------------------------------------------


def _show(text: str) -> str:
    """``text`` safe and short for a message: printable names as they are, others as a Python literal."""
    shown = text if text.isprintable() else ascii(text)
    return shown if len(shown) <= _SHOWN_CHARS else shown[:_SHOWN_CHARS] + "..."


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _safe_parts(name: str, *, origin: str) -> tuple[str, ...]:
    """The '/'-separated parts of a member name (``.`` and empty parts dropped), or IntakeError saying why
    the name could reach outside the folder or cannot be a portable file name."""

    def refuse(why: str) -> IntakeError:
        return IntakeError(f"{origin}: {_show(name)}: {why}")

    if not name:
        raise refuse("empty member name")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise refuse("control character in the name")
    if "\\" in name:
        raise refuse("backslash in the name (use '/' as the separator)")
    if name.startswith("/") or _DRIVE.match(name):
        raise refuse("absolute path")
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    if ".." in parts:
        raise refuse("path leaves the folder ('..')")
    if len(name) > MAX_PATH_CHARS:
        raise refuse(f"path longer than {MAX_PATH_CHARS} characters")
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for part in parts):
        raise refuse(f"a name longer than {MAX_NAME_BYTES} bytes")
    return parts


class _Collector:
    """Checks every member of one intake and keeps the accepted files, enforcing the limits on real bytes."""

    def __init__(
        self, *, origin: str, limits: IntakeLimits, archive_bytes: int | None, field: str = "archive"
    ) -> None:
        self.origin = origin
        self.field = field
        self.limits = limits
        self.archive_bytes = archive_bytes
        self.files: dict[tuple[str, ...], bytes] = {}
        self.folders: set[tuple[str, ...]] = set()
        self.folded: dict[str, str] = {}
        self.skipped: list[str] = []
        self.members = 0
        self.total = 0

    def error(self, member: str, why: str) -> IntakeError:
        return IntakeError(f"{self.origin}: {_show(member)}: {why}", field=self.field)

    def member(self, name: str) -> tuple[str, ...]:
        """Count a member and check its name; returns its normalised parts."""
        self.members += 1
        if self.members > self.limits.max_files:
            raise IntakeError(
                f"{self.origin}: more than {self.limits.max_files} members (the file-count limit)",
                field=self.field,
            )
        try:
            return _safe_parts(name, origin=self.origin)
        except IntakeError as exc:
            raise IntakeError(str(exc), field=self.field) from None

    def dropped(self, parts: tuple[str, ...]) -> bool:
        if any(part in DROPPED_FOLDERS for part in parts):
            return True
        return parts[-1] in DROPPED_NAMES or parts[-1].endswith(DROPPED_SUFFIXES)

    def folder(self, parts: tuple[str, ...]) -> None:
        if parts:
            self.folders.add(parts)

    def claim(self, name: str, parts: tuple[str, ...]) -> bool:
        """Reserve ``parts`` for a file; False when it is dropped litter. Refuses duplicates, names that differ
        only in case, code blobs, and a declared size over the limits (before reading anything)."""
        if not parts:
            raise self.error(name, "a file without a name")
        path = "/".join(parts)
        if self.dropped(parts):
            self.skipped.append(path)
            return False
        folded = path.casefold()
        if folded in self.folded:
            earlier = self.folded[folded]
            why = "duplicate member" if earlier == path else f"same name as {_show(earlier)} but for case"
            raise self.error(path, why)
        self.folded[folded] = path
        if parts[-1].lower().endswith(CODE_BLOB_SUFFIXES):
            raise self.error(path, "native modules and zip imports are refused (a reviewer cannot read them)")
        return True

    def check_declared(self, path: str, declared: int) -> None:
        if declared > self.limits.max_member_bytes:
            raise self.error(path, self._member_over())
        if self.total + declared > self.limits.max_bytes:
            raise self.error(path, self._total_over())

    def _member_over(self) -> str:
        return f"larger than the {_size(self.limits.max_member_bytes)} per-file limit"

    def _total_over(self) -> str:
        return f"the files exceed the {_size(self.limits.max_bytes)} size limit"

    def add(self, parts: tuple[str, ...], chunks: Iterable[bytes]) -> None:
        """Read a file's real bytes, refusing as soon as a size or expansion limit is passed."""
        path = "/".join(parts)
        limits = self.limits
        ratio_cap = None if self.archive_bytes is None else limits.max_ratio * max(self.archive_bytes, 1)
        buf = bytearray()
        for chunk in chunks:
            buf += chunk
            self.total += len(chunk)
            if len(buf) > limits.max_member_bytes:
                raise self.error(path, self._member_over())
            if self.total > limits.max_bytes:
                raise self.error(path, self._total_over())
            if ratio_cap is not None and self.total > ratio_cap:
                raise self.error(
                    path,
                    f"the archive expands more than {limits.max_ratio:g} times its size "
                    "(the compression-ratio limit)",
                )
        data = bytes(buf)
        if parts[-1].lower().endswith(TEXT_SUFFIXES):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self.error(path, f"not UTF-8 at byte {exc.start}") from None
        elif data.startswith(b"\x7fELF"):
            raise self.error(path, "native executables and modules are refused (a reviewer cannot read them)")
        self.files[parts] = data

    def result(self, *, source: str, commit: str | None = None, strip_top: bool = True) -> IntakeResult:
        if not self.files:
            raise IntakeError(f"{self.origin}: no files", field=self.field)
        for parts in self.files:
            for cut in range(1, len(parts)):
                if parts[:cut] in self.files:
                    raise self.error("/".join(parts[:cut]), "both a file and a folder")
            if parts in self.folders:
                raise self.error("/".join(parts), "both a file and a folder")
        tops = {parts[0] for parts in self.files}
        strip = int(strip_top and len(tops) == 1 and all(len(parts) > 1 for parts in self.files))
        files = {"/".join(parts[strip:]): data for parts, data in sorted(self.files.items())}
        return IntakeResult(
            files=files, source=source, origin=self.origin, commit=commit, skipped=tuple(self.skipped)
        )


# --- archives -------------------------------------------------------------------------------------------

_KINDS_BY_SUFFIX = ((".tar.gz", "tar.gz"), (".tgz", "tar.gz"), (".tar", "tar"), (".zip", "zip"))


class _CappedReader:
    """A read-only stream that refuses to deliver more than ``cap`` bytes (a tar stream's headers and pax
    records are read by tarfile before any member limit applies, so the whole stream is bounded here)."""

    def __init__(self, inner: BinaryIO, cap: int, on_over: Callable[[], IntakeError]) -> None:
        self.inner, self.cap, self.on_over, self.consumed = inner, cap, on_over, 0

    def read(self, n: int = -1) -> bytes:
        room = self.cap - self.consumed + 1
        data = self.inner.read(room if n is None or n < 0 else min(n, room))
        self.consumed += len(data)
        if self.consumed > self.cap:
            raise self.on_over()
        return data


def _content_kind(head: bytes) -> str | None:
    if head.startswith(b"\x1f\x8b"):
        return "tar.gz"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head[257:262] == b"ustar":
        return "tar"
    return None


def _buffered(stream: BinaryIO, *, origin: str, max_bytes: int) -> tuple[BinaryIO, int]:
    """A seekable view of the upload and its size; refuses an archive over ``max_bytes`` before reading it
    when the size is known (Django's uploads are seekable), else while reading it into memory."""
    too_big = IntakeError(f"{origin}: the archive is larger than the {_size(max_bytes)} size limit")
    seekable = False
    with contextlib.suppress(AttributeError, OSError, ValueError):
        seekable = stream.seekable()
    if seekable:
        start = stream.tell()
        size = stream.seek(0, os.SEEK_END) - start
        stream.seek(start)
        if size > max_bytes:
            raise too_big
        return stream, size
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise too_big
    return io.BytesIO(data), len(data)


def intake_archive(*, filename: str, stream: BinaryIO, limits: IntakeLimits) -> IntakeResult:
    """The files of an uploaded ``.zip``, ``.tar.gz``/``.tgz`` or ``.tar`` archive (module docstring).

    The kind is read from the content and must agree with the name. Nothing is written to disk.
    """
    origin = _show(Path(filename.replace("\\", "/")).name or "archive")
    lowered = filename.lower()
    by_name = next((kind for suffix, kind in _KINDS_BY_SUFFIX if lowered.endswith(suffix)), None)
    if by_name is None:
        raise IntakeError(f"{origin}: not a .zip, .tar.gz, .tgz or .tar file")
    source, size = _buffered(stream, origin=origin, max_bytes=limits.max_bytes)
    start = source.tell()
    head = source.read(512)
    source.seek(start)
    by_content = _content_kind(head)
    if by_content != by_name:
        found = f"a {by_content} archive" if by_content else "not an archive this portal reads"
        raise IntakeError(f"{origin}: the name says {by_name}, but the content is {found}")
    collector = _Collector(origin=origin, limits=limits, archive_bytes=size)
    if by_content == "zip":
        _read_zip(source, collector)
    else:
        _read_tar(source, collector, gz=by_content == "tar.gz")
    return collector.result(source="archive")


def _mode_problem(mode: int) -> str | None:
    kind = stat.S_IFMT(mode)
    if kind in (0, stat.S_IFREG, stat.S_IFDIR):
        return None
    names = {
        stat.S_IFLNK: "symbolic link",
        stat.S_IFCHR: "device file",
        stat.S_IFBLK: "device file",
        stat.S_IFIFO: "fifo",
        stat.S_IFSOCK: "socket",
    }
    return f"{names.get(kind, 'special file')}: only plain files and folders are accepted"


def _read_zip(source: BinaryIO, collector: _Collector) -> None:
    origin = collector.origin
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise IntakeError(f"{origin}: not a readable zip archive ({_show(str(exc))})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > collector.limits.max_files:
            raise IntakeError(
                f"{origin}: {len(infos)} members, over the {collector.limits.max_files} file-count limit"
            )
        for info in infos:
            parts = collector.member(info.filename)
            # Unix archivers keep the file type in the upper half of external_attr; others do not set it.
            mode = info.external_attr >> 16 if info.create_system == 3 else 0
            if problem := _mode_problem(mode):
                raise collector.error(info.filename, problem)
            if info.is_dir():
                collector.folder(parts)
                continue
            if info.flag_bits & 0x1:
                raise collector.error(info.filename, "encrypted members are refused")
            if not collector.claim(info.filename, parts):
                continue
            collector.check_declared(info.filename, info.file_size)
            try:
                with archive.open(info) as member:
                    collector.add(parts, iter(lambda member=member: member.read(_CHUNK), b""))
            except IntakeError:
                raise
            except (
                zipfile.BadZipFile,
                zlib.error,
                EOFError,
                OSError,
                RuntimeError,
                NotImplementedError,
            ) as exc:
                raise collector.error(
                    info.filename, f"corrupt or unsupported member ({_show(str(exc))})"
                ) from None
            except Exception as exc:  # lzma/bz2 decoder errors have their own types: still a bad member
                raise collector.error(info.filename, f"corrupt member ({type(exc).__name__})") from None


def _read_tar(source: BinaryIO, collector: _Collector, *, gz: bool) -> None:
    origin, limits = collector.origin, collector.limits
    cap = limits.max_bytes + _TAR_OVERHEAD_PER_MEMBER * (limits.max_files + 1) + _TAR_OVERHEAD_FIXED
    raw: BinaryIO = gzip.GzipFile(fileobj=source, mode="rb") if gz else source
    stream = _CappedReader(
        raw,
        cap,
        lambda: IntakeError(
            f"{origin}: the archive unpacks to more than {_size(cap)} (the size limit with tar headers)"
        ),
    )
    current = ""
    try:
        # Stream mode: members are read once, in order, and tarfile never seeks or extracts anything.
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for info in archive:
                current = info.name
                parts = collector.member(info.name)
                if info.issym() or info.islnk():
                    kind = "symbolic link" if info.issym() else "hard link"
                    raise collector.error(info.name, f"{kind} (to {_show(info.linkname)}): links are refused")
                if info.ischr() or info.isblk():
                    raise collector.error(info.name, _mode_problem(stat.S_IFCHR) or "")
                if info.isfifo():
                    raise collector.error(info.name, _mode_problem(stat.S_IFIFO) or "")
                if info.isdir():
                    collector.folder(parts)
                    continue
                if not info.isreg() or info.issparse():
                    raise collector.error(info.name, "unsupported member type: only plain files and folders")
                if not collector.claim(info.name, parts):
                    continue
                collector.check_declared(info.name, info.size)
                member = archive.extractfile(info)
                if member is None:
                    raise collector.error(info.name, "unreadable member")
                collector.add(parts, iter(lambda member=member: member.read(_CHUNK), b""))
    except IntakeError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error, ValueError) as exc:
        where = f" at {_show(current)}" if current else ""
        raise IntakeError(f"{origin}: not a readable tar archive{where} ({_show(str(exc))})") from None


# --- git --------------------------------------------------------------------------------------------------


def check_git_url(url: str, *, allow_file_urls: bool) -> str:
    """``url`` when git intake may fetch it, else IntakeError(field="url") saying why. Only ``https://`` (and
    ``file://`` when allowed); transport helpers (``ext::``, ``fd::``), option-like URLs, credentials in the
    URL and hosts ``researchcodebench.outbound`` refuses without a lookup are refused; ``intake_git`` then
    resolves the host once and fetches from exactly that public address."""
    accepted = "https://" + (" or file://" if allow_file_urls else "")

    def refuse(why: str) -> IntakeError:
        return IntakeError(f"{_show(url)}: {why}", field="url")

    if not url or not url.strip():
        raise refuse("empty URL")
    if url != url.strip() or any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise refuse("spaces or control characters in the URL")
    if url.startswith("-"):
        raise refuse("looks like a command-line option")
    if _TRANSPORT_HELPER.match(url):
        raise refuse(f"git transport helpers ('::') are refused; use a {accepted} URL")
    if len(url) > 2000:
        raise refuse("URL longer than 2000 characters")
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port  # reading the port refuses a malformed one
    except ValueError as exc:
        raise refuse(f"not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme == "file" and allow_file_urls:
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise refuse("a file:// URL needs an absolute path (file:///path/to/repo)")
        return url
    if scheme != "https":
        raise refuse(f"only {accepted} URLs are accepted")
    if not host:
        raise refuse("no host in the URL")
    if parts.username is not None or parts.password is not None:
        raise refuse("credentials in the URL are refused (public repositories only)")
    if outbound.static_refused(host):
        # The same answer as for a host that does not answer (researchcodebench/outbound.py).
        raise refuse(outbound.UNREACHABLE)
    return url


def check_commit(commit: str) -> str:
    """The commit as lower-case hex, or IntakeError(field="commit") unless it is 7 to 40 hex digits."""
    value = (commit or "").strip().lower()
    if not _COMMIT.fullmatch(value):
        raise IntakeError(f"{_show(commit or '')}: a commit is 7 to 40 hexadecimal digits", field="commit")
    return value


def _git_env(*, allow_file_urls: bool) -> dict[str, str]:
    """The environment of every git process: no system or user configuration, no prompts, only the allowed
    transports (GIT_ALLOW_PROTOCOL also governs any process git starts itself)."""
    return {
        "GIT_ALLOW_PROTOCOL": "https:file" if allow_file_urls else "https",
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_COUNT": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_LFS_SKIP_SMUDGE": "1",
    }


def _git_config(*, allow_file_urls: bool) -> list[str]:
    file_allow = "always" if allow_file_urls else "never"
    settings = {
        "protocol.allow": "never",
        "protocol.https.allow": "always",
        "protocol.file.allow": file_allow,
        # Any sha may be fetched by name with protocol v2, so one commit is fetched without its history.
        "protocol.version": "2",
        "core.hooksPath": os.devnull,
        "core.askPass": "",
        "credential.helper": "",
        "http.followRedirects": "false",
        "transfer.fsckObjects": "true",
        "fetch.recurseSubmodules": "false",
        "submodule.recurse": "false",
        "gc.auto": "0",
        "maintenance.auto": "false",
    }
    return [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]


def _folder_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


class _GitRun:
    """Runs git (through gitpython) in one quarantine folder, killing it on the deadline or when the folder
    grows past the size limit: a hostile server cannot stream more than that onto the disk."""

    def __init__(
        self,
        *,
        folder: Path,
        url: str,
        limits: IntakeLimits,
        deadline: float,
        destination: outbound.Destination | None = None,
    ) -> None:
        self.folder, self.url, self.limits, self.deadline = folder, url, limits, deadline
        self.git = git.Git(str(folder))
        self.env = _git_env(allow_file_urls=limits.allow_file_urls)
        self.config = _git_config(allow_file_urls=limits.allow_file_urls)
        if destination is not None:
            self.config += ["-c", f"http.curloptResolve={destination.curl_resolve()}"]

    def __call__(self, *args: str) -> tuple[int, bytes, str]:
        """(exit status, stdout, stderr) of ``git <args>``."""
        command = [git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git", *self.config, *args]
        try:
            handle = self.git.execute(command, as_process=True, env=self.env, start_new_session=True)
        except git.GitCommandNotFound:
            raise IntakeError("git intake is not available: the git program is not installed") from None
        proc: subprocess.Popen = handle.proc
        out, err = bytearray(), bytearray()
        keep = self.limits.max_bytes + 1
        readers = [
            threading.Thread(target=_drain, args=(proc.stdout, out, keep), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, err, _GIT_STDERR_KEPT), daemon=True),
        ]
        for reader in readers:
            reader.start()
        problem = None
        while proc.poll() is None:
            if time.monotonic() > self.deadline:
                problem = f"took longer than the {self.limits.git_timeout_s:g} s time limit"
            elif _folder_bytes(self.folder) > self.limits.max_bytes + _GIT_SIZE_SLACK or len(out) >= keep:
                problem = f"sent more than the {_size(self.limits.max_bytes)} size limit"
            if problem:
                _kill_group(proc)
                break
            time.sleep(0.05)
        proc.wait()
        for reader in readers:
            reader.join(timeout=5)
        if not problem and _folder_bytes(self.folder) > self.limits.max_bytes + _GIT_SIZE_SLACK:
            problem = f"sent more than the {_size(self.limits.max_bytes)} size limit"
        if problem:
            raise IntakeError(f"{_show(self.url)}: {problem}", field="url")
        return proc.returncode, bytes(out), err.decode("utf-8", "replace")


def _drain(pipe: BinaryIO | None, into: bytearray, keep: int) -> None:
    if pipe is None:
        return
    with contextlib.suppress(OSError, ValueError):
        for chunk in iter(lambda: pipe.read(8192), b""):
            if len(into) < keep:
                into += chunk[: keep - len(into)]


def _kill_group(proc: subprocess.Popen) -> None:
    # git runs helpers (git-remote-https, index-pack) in its process group: stop them all.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _git_failure(url: str, commit: str, stderr: str) -> IntakeError:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = stderr.lower()
    if any(
        s in text for s in ("not our ref", "couldn't find remote ref", "no such remote ref", "bad object")
    ):
        return IntakeError(f"commit {commit}: not found in {_show(url)}", field="commit")
    if any(s in text for s in _UNREACHABLE_SIGNS):
        # Whatever the transport said (refused, reset, TLS cut short, timed out): one answer, no port oracle.
        return IntakeError(f"{_show(url)}: {outbound.UNREACHABLE}", field="url")
    last = _show(lines[-1].removeprefix("fatal: ")) if lines else "no message"
    return IntakeError(f"{_show(url)}: git fetch failed: {last}", field="url")


#: git's words for a host it could not talk to (curl's errors behind "unable to access").
_UNREACHABLE_SIGNS = (
    "unable to access", "could not resolve", "couldn't connect", "failed to connect", "connection refused",
    "connection reset", "connection timed out", "timed out", "empty reply", "recv failure", "ssl", "tls",
    "gnutls", "handshake", "network is unreachable",
)  # fmt: skip


def _resolve_abbreviated(run: _GitRun, git_dir: str, url: str, prefix: str) -> str:
    """The full sha of a branch or tag tip starting with ``prefix``: an abbreviated commit cannot be fetched
    by itself, as a git server only answers full object names."""
    status, out, err = run("ls-remote", "--", url)
    if status != 0:
        raise _git_failure(url, prefix, err)
    shas = {line.split()[0] for line in out.decode("ascii", "replace").splitlines() if line.strip()}
    found = sorted(sha for sha in shas if sha.startswith(prefix))
    if len(found) == 1:
        return found[0]
    why = "is ambiguous among" if found else "names no"
    raise IntakeError(
        f"commit {prefix}: {why} branch or tag tip of {_show(url)}; give the full 40-digit commit",
        field="commit",
    )


def intake_git(*, url: str, commit: str, limits: IntakeLimits, quarantine: Path) -> IntakeResult:
    """The files of ``commit`` in the git repository at ``url`` (module docstring for what is refused).

    Fetches that one commit (``--depth 1``, no tags, no hooks, only the allowed transports) into a fresh
    folder under ``quarantine`` and reads its tree from the object store; the folder is removed afterwards.
    ``git_timeout_s`` bounds the whole intake, and the folder may not grow past ``max_bytes``.
    """
    url = check_git_url(url, allow_file_urls=limits.allow_file_urls)
    commit = check_commit(commit)
    deadline = time.monotonic() + limits.git_timeout_s
    destination = None
    parts = urlsplit(url)
    if parts.scheme.lower() == "https":
        # Resolved once here; git then connects to exactly that address (curl's resolve list).
        try:
            destination = outbound.resolve_public(parts.hostname or "", parts.port or 443)
        except outbound.OutboundRefused:
            raise IntakeError(f"{_show(url)}: {outbound.UNREACHABLE}", field="url") from None
    with quarantine_folder(root=quarantine, prefix="git-") as folder:
        repo_dir = folder / "repo.git"
        run = _GitRun(folder=folder, url=url, limits=limits, deadline=deadline, destination=destination)
        status, _out, err = run("init", "--bare", "--quiet", "--template=", str(repo_dir))
        if status != 0:
            raise IntakeError(f"{_show(url)}: cannot prepare the quarantine repository: {_show(err.strip())}")
        git_dir = f"--git-dir={repo_dir}"
        if len(commit) < 40:
            commit = _resolve_abbreviated(run, git_dir, url, commit)
        status, _out, err = run(git_dir, "fetch", "--quiet", "--no-tags", "--depth=1", "--", url, commit)
        if status != 0:
            raise _git_failure(url, commit, err)
        repo = git.Repo(str(repo_dir))
        try:
            repo.git.update_environment(**run.env)
            return _read_commit(repo, url=url, commit=commit, limits=limits, deadline=deadline)
        finally:
            repo.close()


def _read_commit(
    repo: git.Repo, *, url: str, commit: str, limits: IntakeLimits, deadline: float
) -> IntakeResult:
    try:
        tree = repo.commit(commit).tree
    except (ValueError, git.BadName, git.BadObject, git.GitCommandError):
        raise IntakeError(f"commit {commit}: not a commit in {_show(url)}", field="commit") from None
    # The files are what the commit holds: a form shows their problems on the commit it asked for.
    collector = _Collector(origin=_show(url), limits=limits, archive_bytes=None, field="commit")
    for item in tree.traverse():
        if time.monotonic() > deadline:
            raise IntakeError(
                f"{_show(url)}: took longer than the {limits.git_timeout_s:g} s time limit", field="url"
            )
        parts = collector.member(item.path)
        if item.type == "submodule" or stat.S_IFMT(item.mode) == 0o160000:
            raise collector.error(item.path, "git submodule: submodules are refused, include the files")
        if item.type == "tree":
            collector.folder(parts)
            continue
        if problem := _mode_problem(item.mode):
            raise collector.error(item.path, problem)
        if not collector.claim(item.path, parts):
            continue
        collector.check_declared(item.path, item.size)
        stream = item.data_stream
        collector.add(parts, iter(lambda stream=stream: stream.read(_CHUNK), b""))
    return collector.result(source="git", commit=commit, strip_top=False)
