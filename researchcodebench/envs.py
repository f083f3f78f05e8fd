"""Per-task evaluation environments: requirements -> lock (uv) -> built virtual environment (docs/environments.md).

A task's environment is its requirements resolved once into a *lock*: exact versions and hashes from
``uv pip compile --generate-hashes``, on top of a shared base (the pinned CPU build of torch and the libraries
every example uses). The lock's text is what a task version stores; its sha256 names the built environment,
so tasks that share a lock share one environment and a published version's environment never changes.

- ``task_requirements`` reads a task's requirements: ``paper2code_requirements.txt`` or ``requirements.txt``
  in its folder, else the manifest's ``requirements``, else ``infer_requirements`` (imports of its code);
- ``lock_requirements`` resolves them (no network beyond the ``Sources`` given; wheels only);
- ``build_environment`` builds a lock once per host under ``cache_root/<hash>`` (``uv venv`` + ``uv pip
  sync``), atomically (built in ``<hash>.building``, renamed into place) and under a per-hash file lock, with
  the build log kept as ``<hash>.log``. Packages are hardlinked from one uv cache (``cache_root/uv-cache``),
  so an extra environment costs its own few megabytes, not another copy of torch;
- ``prune_environments`` removes environments unused for a while or beyond a disk budget.

Only wheels are ever installed (``--no-build``): building a source distribution would run a stranger's
``setup.py`` on the worker host, outside any sandbox. A requirement that cannot be resolved or installed
raises ``EnvironmentBuildError`` naming the package and uv's reason; the runner turns it into an
infrastructure verdict, never a model failure.

Plain Python: no Django. The CLI and the portal pass the package sources (``Sources``) as arguments.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

#: The shared base of every environment: the CPU build of torch (a bare ``torch`` would resolve to the
#: multi-GB CUDA build) and the libraries of requirements-bench.txt, at the same versions.
BASE_REQUIREMENTS: tuple[str, ...] = ("torch==2.13.0+cpu", "numpy==2.4.6", "scipy==1.17.1", "PyYAML==6.0.3")
#: The Python version of every environment unless a caller says otherwise (torch's CPU wheel is for 3.11).
DEFAULT_PYTHON = "3.11"
#: The platform locks are resolved for (the worker hosts' and the docker image's).
PLATFORM = "x86_64-manylinux_2_28"
#: Requirement files looked for in a task folder, first found wins.
REQUIREMENTS_FILES = ("paper2code_requirements.txt", "requirements.txt")
#: Import names the base provides.
BASE_IMPORTS = frozenset({"torch", "numpy", "scipy", "yaml"})
#: Import name -> distribution, where they differ (the rest install under their import name).
IMPORT_TO_DISTRIBUTION: dict[str, str] = {
    "sklearn": "scikit-learn",
    "PIL": "pillow",
    "yaml": "PyYAML",
    "cv2": "opencv-python-headless",
    "ml_collections": "ml-collections",
    "skimage": "scikit-image",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "attr": "attrs",
    "google.protobuf": "protobuf",
    "tensorflow_datasets": "tensorflow-datasets",
    "torch_geometric": "torch-geometric",
    "flax": "flax",
    "jax": "jax",
    "gym": "gym",
    "Levenshtein": "levenshtein",
    "sentencepiece": "sentencepiece",
    "fvcore": "fvcore",
    "lightning": "lightning",
    "pytorch_lightning": "pytorch-lightning",
    "huggingface_hub": "huggingface-hub",
    "tqdm": "tqdm",
}
#: Header of every lock; the hash covers it, so the Python version and platform are part of the name.
LOCK_HEADER = "# researchcodebench environment lock: python {python}, platform {platform}\n"
_HEADER_RE = re.compile(r"^# researchcodebench environment lock: python (\S+), platform (\S+)$")
#: The build's own marker inside a finished environment (its lock hash and how long the build took).
BUILD_MARKER = ".rcb-environment"
#: Longest a resolution or a build may take before it is abandoned.
UV_TIMEOUT_S = 1800.0
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class RequirementsError(ValueError):
    """A requirements list or file is not acceptable (the message names the file and line)."""


class EnvironmentBuildError(RuntimeError):
    """An environment cannot be resolved or built. ``package`` is the requirement at fault where uv names
    one; ``reason`` is uv's explanation; ``log_path`` the kept build log (when a build ran)."""

    def __init__(self, *, package: str | None, reason: str, log_path: str | None = None) -> None:
        self.package = package
        self.reason = reason
        self.log_path = log_path
        where = f"package {package!r}: " if package else ""
        super().__init__(f"the task's environment cannot be built: {where}{reason}")


@dataclass(frozen=True)
class Sources:
    """Where packages come from (uv does not read pip's configuration): ``index_url`` replaces PyPI when
    set, ``extra_index_urls`` and ``find_links`` add to it; ``uv`` is the uv executable (default: the one
    installed with the ``uv`` package, else ``uv`` on PATH); ``python`` is the base interpreter of the
    environments (default: ``python<version>`` on PATH, e.g. ``python3.11``)."""

    find_links: tuple[str, ...] = ()
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    uv: str | None = None
    python: str | None = None
    #: A CA bundle for uv's TLS connections (pip's ``cert``) when the host sets neither SSL_CERT_FILE nor
    #: SSL_CERT_DIR; where the sources came from, for reports (``describe``).
    cert: str | None = None
    origin: str = "given"

    def describe(self) -> str:
        """One line naming the sources and where they came from (``--env auto`` prints it)."""
        parts = [f"index {self.index_url or 'PyPI'}"]
        if self.extra_index_urls:
            parts.append("extra indexes " + " ".join(self.extra_index_urls))
        if self.find_links:
            parts.append("find-links " + " ".join(self.find_links))
        if self.cert:
            parts.append(f"CA bundle {self.cert}")
        return f"package sources ({self.origin}): " + "; ".join(parts)

    def args(self) -> list[str]:
        out: list[str] = []
        if self.index_url:
            out += ["--index-url", self.index_url]
        for url in self.extra_index_urls:
            out += ["--extra-index-url", url]
        for link in self.find_links:
            out += ["--find-links", link]
        # Every configured source is trusted alike (the operator lists them), and the local CPU torch
        # wheel must win over an index's build of the same version.
        out += ["--index-strategy", "unsafe-best-match"]
        return out

    def executable(self) -> str:
        if self.uv:
            return self.uv
        try:
            from uv import find_uv_bin

            return find_uv_bin()
        except (ImportError, FileNotFoundError):
            found = shutil.which("uv")
            if found is None:
                raise EnvironmentBuildError(
                    package=None, reason="uv is not installed (pip install uv, or name it in the sources)"
                ) from None
            return found


#: pip's configuration scopes, lowest precedence first (``pip config list`` prints ``scope.key='value'``).
_PIP_SCOPES = ("global", "user", "site", ":env:")
_PIP_LINE = re.compile(r"^(?P<scope>[^.]*|:env:)\.(?P<key>[a-z-]+)=(?P<value>.*)$")


def pip_config(python: str | None = None, *, environ: dict[str, str] | None = None) -> dict[str, str]:
    """pip's own effective configuration (config files and ``PIP_*`` variables, pip's precedence) as
    ``{key: value}``, read with ``python -m pip config list`` (default: this interpreter). Empty when pip
    is missing or fails."""
    try:
        done = subprocess.run(
            [python or sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ if environ is None else environ),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    found: dict[str, tuple[int, str]] = {}
    for line in done.stdout.splitlines():
        match = _PIP_LINE.match(line.strip())
        if match is None:
            continue
        scope = match["scope"]
        rank = _PIP_SCOPES.index(scope) if scope in _PIP_SCOPES else 0
        value = match["value"]
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        key = match["key"]
        if key not in found or rank >= found[key][0]:
            found[key] = (rank, value)
    return {key: value for key, (_rank, value) in found.items()}


def _words(value: str | None) -> tuple[str, ...]:
    return tuple(part for part in (value or "").replace(",", " ").split() if part)


def sources_from_pip(python: str | None = None, *, environ: dict[str, str] | None = None) -> Sources:
    """The sources pip on this host would use: its index, extra indexes, find-links and CA bundle."""
    config = pip_config(python, environ=environ)
    return Sources(
        find_links=_words(config.get("find-links")),
        index_url=config.get("index-url") or None,
        extra_index_urls=_words(config.get("extra-index-url")),
        cert=config.get("cert") or None,
        origin="pip's configuration",
    )


def default_sources(
    *,
    find_links: Iterable[str] = (),
    index_url: str | None = None,
    extra_index_urls: Iterable[str] = (),
    python: str | None = None,
) -> Sources:
    """The sources given (``RCB_ENV_*``) when any is; else pip's own configuration (``sources_from_pip``)."""
    links, extras = tuple(find_links), tuple(extra_index_urls)
    if links or index_url or extras:
        return Sources(
            find_links=links, index_url=index_url or None, extra_index_urls=extras, origin="RCB_ENV_*"
        )
    return sources_from_pip(python)


@dataclass(frozen=True)
class Lock:
    """A resolved environment: the lock file's text (header, then ``name==version`` with hashes) and the
    sha256 hex of that text, which names the environment."""

    text: str
    hash: str

    @classmethod
    def from_text(cls, text: str) -> Lock:
        """A stored lock; raises ``EnvironmentBuildError`` when the text is not one of ours."""
        if _HEADER_RE.match(text.split("\n", 1)[0]) is None:
            raise EnvironmentBuildError(package=None, reason="the stored lock has no environment header")
        return cls(text=text, hash=hashlib.sha256(text.encode()).hexdigest())

    @property
    def python(self) -> str:
        match = _HEADER_RE.match(self.text.split("\n", 1)[0])
        return match.group(1) if match else DEFAULT_PYTHON

    @property
    def packages(self) -> tuple[str, ...]:
        """The pinned ``name==version`` lines, in the lock's (sorted) order."""
        return tuple(
            line.split(" ", 1)[0]
            for line in self.text.splitlines()
            if line and not line[0].isspace() and not line.startswith("#")
        )


@dataclass(frozen=True)
class BuiltEnvironment:
    """A built environment: its folder and interpreter; ``built`` is False when it was reused, and
    ``seconds`` how long this call took (the build, or finding it built)."""

    hash: str
    path: str
    python: str
    built: bool
    seconds: float
    log_path: str


# ---------------------------------------------------------------------------------------- requirements


def _local_modules(root: Path, files: Iterable[str]) -> set[str]:
    """Every name a task file or folder could be imported as (a module of the task, not a distribution)."""
    names: set[str] = set()
    for rel in files:
        path = PurePosixPath(rel)
        names.update(path.parts[:-1])
        if path.suffix in (".py", ".so", ".pyd"):
            names.add(path.name.split(".", 1)[0])
    return names


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type
    if kinds is None:
        return True
    nodes = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in nodes)


def _required_imports(source: str) -> set[str]:
    """Top-level names of the absolute imports of ``source``, leaving out optional ones (inside a ``try``
    that catches ``ImportError``). Unparsable source gives nothing (the validation reports it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    optional: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            for stmt in node.body:
                optional.update(id(n) for n in ast.walk(stmt))
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".", 1)[0])
    return names


def third_party_imports(task_root: str | Path, files: Sequence[str] | None = None) -> set[str]:
    """Top-level names of the task's Python files' required imports that neither the task folder nor the
    standard library provides (the base's ``torch``, ``numpy``... included): what an interpreter must
    have for the task's tests to start. Optional imports (inside a ``try`` catching ``ImportError``) and
    relative imports are left out."""
    root = Path(task_root)
    if files is None:
        from .pset import task_files

        files = task_files(root)
    local = _local_modules(root, files)
    found: set[str] = set()
    for rel in files:
        if not rel.endswith(".py"):
            continue
        try:
            found |= _required_imports((root / rel).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return {
        name
        for name in found
        if name not in local and name not in sys.stdlib_module_names and name != "__future__"
    }


def infer_requirements(task_root: str | Path, files: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """(import name, distribution) for every third-party import of the task's Python files that the base
    does not provide, sorted by import name. The task's own modules, the standard library and relative
    imports are left out; a task that needs only torch/numpy/scipy gives ``[]``."""
    root = Path(task_root)
    if files is None:
        from .pset import task_files

        files = task_files(root)
    found = third_party_imports(root, files)
    wanted = sorted(name for name in found if name not in BASE_IMPORTS)
    needs = [(name, IMPORT_TO_DISTRIBUTION.get(name, name)) for name in wanted]
    texts = "\n".join(
        (root / rel).read_text(encoding="utf-8", errors="replace")
        for rel in files
        if rel.endswith(".py") and (root / rel).is_file()
    )
    for (module, call), distribution in OPTIONAL_ENGINES.items():
        if module in found and call in texts and all(d != distribution for _, d in needs):
            needs.append((f"{module}.{call}", distribution))
    return sorted(needs)


#: Engines a common call needs that no import names: (imported module, call) -> distribution.
OPTIONAL_ENGINES: dict[tuple[str, str], str] = {
    ("pandas", "read_parquet"): "pyarrow",
    ("pandas", "to_parquet"): "pyarrow",
    ("pandas", "read_feather"): "pyarrow",
    ("pandas", "read_excel"): "openpyxl",
}
#: A requirement line naming a version-control checkout (``git+https://...@commit``, ``-e git+...``,
#: ``name @ git+...``): only released wheels are installed.
_VCS_LINE = re.compile(r"^(?:-e\s+|--editable\s+)?(?:\S+\s*@\s*)?(?:git|hg|svn|bzr)\+\S+", re.IGNORECASE)


def vcs_lines(text: str, *, source: str) -> tuple[str, tuple[str, ...]]:
    """``text`` without its version-control lines, and a note for each naming ``source:line`` and how to
    replace it."""
    kept: list[str] = []
    notes: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if _VCS_LINE.match(line):
            notes.append(
                f"{source}:{number}: {line[:120]!r} is a version-control checkout, which is never installed "
                "(only released wheels are); replace it with the package's released version "
                "('name==X.Y'), or copy the code the task needs into the task folder. Its imports are "
                "inferred from the code meanwhile."
            )
            kept.append("")
        else:
            kept.append(raw)
    return "\n".join(kept), tuple(notes)


def parse_requirements(text: str, *, source: str) -> list[str]:
    """The requirements of a requirements file, one normalised PEP 508 string each.

    Refuses, naming ``source:line``, anything but plain requirements: options (``-r``, ``--index-url``,
    ``-e``...) and direct references (``name @ URL``) could fetch code from anywhere, and a requirement
    that is not PEP 508. Comments and blank lines are skipped.
    """
    out: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            raise RequirementsError(
                f"{source}:{number}: options such as {line.split()[0]!r} are not allowed; list packages only"
            )
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise RequirementsError(f"{source}:{number}: not a valid requirement: {exc}") from exc
        if requirement.url:
            raise RequirementsError(
                f"{source}:{number}: direct references ({requirement.name} @ ...) are not allowed; "
                "name a released version instead"
            )
        out.append(str(requirement))
    return out


@dataclass(frozen=True)
class TaskRequirements:
    """What a task needs beyond the base, and where that came from: a file name, ``task.yaml`` or
    ``inferred`` (with the imports that gave each distribution in ``inferred``)."""

    requirements: tuple[str, ...]
    source: str
    inferred: tuple[tuple[str, str], ...] = field(default=())
    #: lines of the requirements file that were left out, each with how to replace it
    notes: tuple[str, ...] = field(default=())


def task_requirements(
    task_root: str | Path, *, manifest_requirements: Sequence[str] = ()
) -> TaskRequirements:
    """A task's requirements (see the module docstring for the order); raises ``RequirementsError``."""
    root = Path(task_root)
    for name in REQUIREMENTS_FILES:
        path = root / name
        if path.is_file() and not path.is_symlink():
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise RequirementsError(f"{name}: cannot read: {exc}") from exc
            text, notes = vcs_lines(text, source=name)
            listed = parse_requirements(text, source=name)
            if not notes:
                return TaskRequirements(tuple(listed), name)
            # The rest of the file stands; what the checkouts provided comes from import inference.
            names = {canonicalize_name(Requirement(r).name) for r in listed}
            inferred = tuple((i, d) for i, d in infer_requirements(root) if canonicalize_name(d) not in names)
            merged = tuple(sorted({*listed, *(d for _, d in inferred)}))
            return TaskRequirements(merged, f"{name} and inferred", inferred, notes)
    if manifest_requirements:
        text = "\n".join(manifest_requirements)
        return TaskRequirements(tuple(parse_requirements(text, source="task.yaml requirements")), "task.yaml")
    inferred = infer_requirements(root)
    return TaskRequirements(tuple(sorted({d for _, d in inferred})), "inferred", tuple(inferred))


# ---------------------------------------------------------------------------------------- uv


#: Variables of the caller's environment that uv receives: how this host reaches the network (its CA
#: settings and proxies), nothing else.
NETWORK_VARIABLES = (
    "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "http_proxy", "https_proxy", "all_proxy", "no_proxy",
)  # fmt: skip


def _uv_env(cache_root: str | None, cert: str | None = None) -> dict[str, str]:
    # A fixed, small environment: the core takes its configuration as arguments (``Sources``), and uv
    # must not pick up the caller's UV_* or pip settings; only how the host reaches the network passes.
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": cache_root or tempfile.gettempdir(),
        # Use the host's interpreters only: downloading one would be a silent, unpinned dependency.
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_CONFIG": "1",
        "UV_LINK_MODE": "hardlink",
        "NO_COLOR": "1",
    }
    if cache_root:
        env["UV_CACHE_DIR"] = os.path.join(cache_root, "uv-cache")
    for name in NETWORK_VARIABLES:
        if os.environ.get(name):
            env[name] = os.environ[name]
    if cert and "SSL_CERT_FILE" not in env and "SSL_CERT_DIR" not in env:
        env["SSL_CERT_FILE"] = cert
    return env


def _uv(
    argv: list[str],
    *,
    cache_root: str | None,
    log: list[str],
    cwd: str | None = None,
    cert: str | None = None,
) -> subprocess.CompletedProcess[str]:
    log.append("$ " + " ".join(argv))
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=UV_TIMEOUT_S,
            env=_uv_env(cache_root, cert),
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentBuildError(package=None, reason=f"uv took longer than {UV_TIMEOUT_S:.0f} s") from exc
    except OSError as exc:
        raise EnvironmentBuildError(package=None, reason=f"cannot run uv: {exc}") from exc
    log.append(done.stdout)
    log.append(done.stderr)
    return done


def _failure(stderr: str, requirements: Iterable[str]) -> EnvironmentBuildError:
    """uv's error as an ``EnvironmentBuildError`` naming the requirement its explanation names first."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Resolved", "Using", "Prepared", "hint:"))]
    reason = " ".join(line.removeprefix("error: ").removeprefix("cause: ") for line in useful)[:800]
    names = {canonicalize_name(Requirement(r).name): Requirement(r).name for r in requirements}
    package = None
    first = len(reason) + 1
    for canonical, name in names.items():
        match = re.search(rf"(?<![\w.-]){re.escape(canonical)}(?![\w.-])", reason.lower().replace("_", "-"))
        if match and match.start() < first:
            package, first = name, match.start()
    if package is None:
        match = re.search(r"Because ([A-Za-z0-9][A-Za-z0-9._-]*)", reason)
        package = match.group(1) if match else None
    return EnvironmentBuildError(package=package, reason=reason or "uv failed without a message")


def beyond_base(requirements: Iterable[str], *, base: Sequence[str] = BASE_REQUIREMENTS) -> list[str]:
    """``requirements`` sorted and without repeats, leaving out those the base's pins already satisfy (a
    task that lists ``torch`` shares the base's lock with a task that lists nothing)."""
    pins: dict[str, str] = {}
    for line in base:
        requirement = Requirement(line)
        versions = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if versions:
            pins[canonicalize_name(requirement.name)] = versions[0]
    out: set[str] = set()
    for line in requirements:
        requirement = Requirement(line)
        pinned = pins.get(canonicalize_name(requirement.name))
        if pinned is not None and not requirement.extras and requirement.marker is None:
            if requirement.specifier.contains(pinned, prereleases=True) or not str(requirement.specifier):
                continue
        out.add(str(requirement))
    return sorted(out)


def effective_base(requirements: Iterable[str], *, base: Sequence[str] = BASE_REQUIREMENTS) -> list[str]:
    """``base`` as a task's own requirements leave it: a pin the task excludes (``numpy==1.26.4`` against
    the base's numpy) is dropped, the task's pin wins, and the base's other pins (but torch's) become bare
    names so that uv picks versions that agree with it (scipy for that numpy). torch stays pinned: its CPU
    build is what every environment shares."""
    wanted: dict[str, Requirement] = {}
    for line in requirements:
        requirement = Requirement(line)
        wanted[canonicalize_name(requirement.name)] = requirement
    excluded = set()
    for line in base:
        pin = Requirement(line)
        name = canonicalize_name(pin.name)
        task = wanted.get(name)
        versions = [spec.version for spec in pin.specifier if spec.operator == "=="]
        if name != "torch" and task is not None and versions and str(task.specifier):
            if not task.specifier.contains(versions[0], prereleases=True):
                excluded.add(name)
    if not excluded:
        return list(base)
    out = []
    for line in base:
        name = canonicalize_name(Requirement(line).name)
        if name in excluded:
            continue
        out.append(line if name == "torch" else Requirement(line).name)
    return out


def lock_requirements(
    requirements: Sequence[str],
    *,
    sources: Sources,
    python: str = DEFAULT_PYTHON,
    base: Sequence[str] = BASE_REQUIREMENTS,
    cache_root: str | None = None,
) -> Lock:
    """Resolve ``base`` + ``requirements`` for ``python`` on ``PLATFORM`` into a hash-pinned ``Lock``.

    The same inputs against the same package sources give the same text, hence the same hash. Raises
    ``RequirementsError`` for a requirement that is not PEP 508 and ``EnvironmentBuildError`` (naming the
    package) when uv cannot resolve them.
    """
    checked = parse_requirements("\n".join(requirements), source="requirements")
    base = effective_base(checked, base=base)
    header = LOCK_HEADER.format(python=python, platform=PLATFORM)
    attempts = companion_bases(checked, base)
    failure: EnvironmentBuildError | None = None
    for attempt in attempts:
        wanted = [*attempt, *beyond_base(checked, base=attempt)]
        done = _compile(wanted, sources=sources, python=python, cache_root=cache_root)
        if done.returncode == 0:
            text = header + done.stdout
            return Lock(text=text, hash=hashlib.sha256(text.encode()).hexdigest())
        failure = failure or _failure(done.stderr, wanted)
    assert failure is not None
    raise failure


#: Builds of torch's companion packages made for each torch, newest pairs last: a task that needs
#: torchvision or torchaudio without pinning them gets the companion built for the environment's torch, or
#: (where the sources hold none) the first pair here they do hold. PyPI's torchvision next to another
#: torch fails at import ("operator torchvision::nms does not exist").
TORCH_COMPANIONS: tuple[tuple[str, dict[str, str]], ...] = (
    ("2.13.0+cpu", {"torchvision": "0.28.0+cpu", "torchaudio": "2.13.0+cpu"}),
    ("2.14.1", {"torchvision": "0.29.1", "torchaudio": "2.14.1"}),
    ("2.9.1", {"torchvision": "0.24.1", "torchaudio": "2.9.1"}),
)


def companion_bases(requirements: Sequence[str], base: Sequence[str]) -> list[list[str]]:
    """The bases to try, in order: ``base`` alone when no unpinned companion of torch is wanted, else
    ``base`` with torch and its companions pinned to each pair of ``TORCH_COMPANIONS``, the base's own
    torch first."""
    wanted = {canonicalize_name(Requirement(r).name): Requirement(r) for r in requirements}
    companions = [n for n in ("torchvision", "torchaudio") if n in wanted and not str(wanted[n].specifier)]
    if not companions:
        return [list(base)]
    torch_pin = next((line for line in base if canonicalize_name(Requirement(line).name) == "torch"), None)
    current = torch_pin.split("==", 1)[1] if torch_pin and "==" in torch_pin else None
    pairs = sorted(TORCH_COMPANIONS, key=lambda pair: pair[0] != current)
    out = []
    for torch_version, versions in pairs:
        rest = [line for line in base if canonicalize_name(Requirement(line).name) != "torch"]
        out.append([f"torch=={torch_version}", *rest, *(f"{n}=={versions[n]}" for n in companions)])
    return out


def _compile(
    wanted: Sequence[str], *, sources: Sources, python: str, cache_root: str | None
) -> subprocess.CompletedProcess[str]:
    work = Path(cache_root or os.path.join(os.path.expanduser("~"), ".cache", "researchcodebench", "envs"))
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lock-", dir=work) as tmp:
        # A fixed file name, read from its own folder: uv writes it into the lock's "via" annotations.
        Path(tmp, "requirements.in").write_text("".join(r + "\n" for r in wanted))
        return _uv(
            [
                sources.executable(),
                "pip",
                "compile",
                "requirements.in",
                "--generate-hashes",
                "--no-header",
                "--no-build",
                "--python-version",
                python,
                "--python-platform",
                PLATFORM,
                *sources.args(),
            ],
            cache_root=str(work),
            log=[],
            cwd=tmp,
            cert=sources.cert,
        )


# ---------------------------------------------------------------------------------------- building


def environment_path(cache_root: str | Path, lock_hash: str) -> Path:
    """Where the environment of ``lock_hash`` lives once built."""
    if not _HEX64.match(lock_hash):
        raise EnvironmentBuildError(package=None, reason=f"{lock_hash!r} is not a lock hash")
    return Path(cache_root) / lock_hash


def _mark_used(path: Path) -> None:
    # The folder's mtime is its last use: what pruning by age and by disk budget goes by.
    try:
        os.utime(path)
    except OSError:
        pass


def build_environment(lock: Lock, *, cache_root: str | Path, sources: Sources) -> BuiltEnvironment:
    """The environment of ``lock`` under ``cache_root``, built when missing (see the module docstring).

    Safe under concurrent callers on one host: one builds while the others wait on the per-hash file lock
    and then find it built. A failed build leaves nothing in place but its log, and raises
    ``EnvironmentBuildError`` naming the package.
    """
    started = time.monotonic()
    root = Path(cache_root)
    final = environment_path(root, lock.hash)
    log_path = root / f"{lock.hash}.log"
    python = final / "bin" / "python"
    if python.exists():
        _mark_used(final)
        return BuiltEnvironment(
            lock.hash, str(final), str(python), False, time.monotonic() - started, str(log_path)
        )
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{lock.hash}.lock", "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            if python.exists():
                _mark_used(final)
                return BuiltEnvironment(
                    lock.hash, str(final), str(python), False, time.monotonic() - started, str(log_path)
                )
            _build(lock, root=root, final=final, log_path=log_path, sources=sources)
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)
    return BuiltEnvironment(
        lock.hash, str(final), str(python), True, time.monotonic() - started, str(log_path)
    )


def _build(lock: Lock, *, root: Path, final: Path, log_path: Path, sources: Sources) -> None:
    staging = root / f"{lock.hash}.building"
    shutil.rmtree(staging, ignore_errors=True)
    log: list[str] = [f"# building environment {lock.hash}\n"]
    uv = sources.executable()
    interpreter = sources.python or shutil.which(f"python{lock.python}") or lock.python
    try:
        lock_file = root / f"{lock.hash}.txt"
        lock_file.write_text(lock.text)
        # Relocatable: built in the staging folder, used after the rename.
        done = _uv(
            [uv, "venv", "--quiet", "--relocatable", "--no-project", "--python", interpreter, str(staging)],
            cache_root=str(root),
            log=log,
            cert=sources.cert,
        )
        if done.returncode != 0:
            raise EnvironmentBuildError(
                package=None, reason=f"no Python {lock.python} on this host: {done.stderr.strip()[:400]}"
            )
        done = _uv(
            [
                uv,
                "pip",
                "sync",
                str(lock_file),
                "--python",
                str(staging / "bin" / "python"),
                "--require-hashes",
                "--no-build",
                *sources.args(),
            ],
            cache_root=str(root),
            log=log,
            cert=sources.cert,
        )
        if done.returncode != 0:
            raise _failure(done.stderr, lock.packages)
        (staging / BUILD_MARKER).write_text(f"{lock.hash}\n")
        os.rename(staging, final)
    except EnvironmentBuildError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        exc.log_path = str(log_path)
        raise
    finally:
        log_path.write_text("\n".join(part for part in log if part))


def environment_size(path: str | Path) -> int:
    """Bytes only this environment holds: files linked from uv's cache (shared by every environment that
    uses the same wheel) are not counted."""
    total = 0
    seen: set[int] = set()
    for dirpath, _dirnames, filenames in os.walk(path):
        for name in filenames:
            try:
                info = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if info.st_nlink > 1 or info.st_ino in seen:
                continue
            seen.add(info.st_ino)
            total += info.st_blocks * 512
    return total


def prune_environments(
    cache_root: str | Path,
    *,
    max_age_days: float | None = None,
    max_bytes: int | None = None,
    keep: Iterable[str] = (),
) -> list[str]:
    """Remove built environments unused for ``max_age_days``, then the least recently used ones until the
    rest hold at most ``max_bytes`` of their own; returns the removed hashes. ``keep`` (lock hashes) and
    environments being built or used under their lock right now are never removed."""
    root = Path(cache_root)
    if not root.is_dir():
        return []
    kept = set(keep)
    entries: list[tuple[float, str, Path]] = []
    for child in root.iterdir():
        if _HEX64.match(child.name) and child.is_dir() and child.name not in kept:
            entries.append((child.stat().st_mtime, child.name, child))
    entries.sort()
    removed: list[str] = []
    now = time.time()
    sizes = {name: environment_size(path) for _, name, path in entries}
    total = sum(sizes.values())
    for mtime, name, path in entries:
        too_old = max_age_days is not None and now - mtime > max_age_days * 86400
        too_big = max_bytes is not None and total > max_bytes
        if not (too_old or too_big):
            continue
        with open(root / f"{name}.lock", "a") as guard:
            try:
                fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            try:
                doomed = root / f"{name}.removing"
                os.rename(path, doomed)
                shutil.rmtree(doomed, ignore_errors=True)
            finally:
                fcntl.flock(guard, fcntl.LOCK_UN)
        for suffix in (".log", ".txt"):
            (root / f"{name}{suffix}").unlink(missing_ok=True)
        total -= sizes[name]
        removed.append(name)
    return removed


def task_environment(
    task_root: str | Path,
    *,
    cache_root: str | Path,
    sources: Sources,
    manifest_requirements: Sequence[str] = (),
    python: str = DEFAULT_PYTHON,
    base: Sequence[str] = BASE_REQUIREMENTS,
) -> tuple[Lock, BuiltEnvironment]:
    """Lock a task folder's requirements (``task_requirements``) and build or reuse the environment."""
    needs = task_requirements(task_root, manifest_requirements=manifest_requirements)
    lock = lock_requirements(
        needs.requirements, sources=sources, python=python, base=base, cache_root=str(cache_root)
    )
    return lock, build_environment(lock, cache_root=cache_root, sources=sources)
