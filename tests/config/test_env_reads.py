"""Where the environment is read: the portal only through ``config/env.py`` (called from the settings), the
benchmark core only at its command line; every variable the settings read is in README's table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PORTAL = ("config", "contributions", "evaluation", "leaderboard")
CORE = "researchcodebench"
#: the core's command line, the one place the core turns environment variables into arguments
CORE_CLI = {
    "researchcodebench/evaluate_cli.py",
    "researchcodebench/images_cli.py",
    "researchcodebench/cli.py",
    "researchcodebench/__main__.py",
    # `rcb generate` (the endpoint's key variable) and `rcb download`/`submit` (RCB_TOKEN): only cli.py imports them
    "researchcodebench/generate_cli.py",
    "researchcodebench/portal_cli.py",
}
#: (file, function): forwarding, not configuration. GPU tests see the worker's device-visibility variables.
FORWARDED = {
    ("researchcodebench/runner.py", "sandbox_env"),
    # the host's CA and proxy variables handed to uv, and pip run in the caller's own environment to read
    # pip's configuration: passed through to a child process, never read as our own settings
    ("researchcodebench/envs.py", "_uv_env"),
    ("researchcodebench/envs.py", "pip_config"),
}
#: read by a library rather than by us (the Docker SDK finds its engine through DOCKER_HOST)
READ_BY_LIBRARIES = {"DOCKER_HOST"}
ENV_HELPERS = {"env_str", "env_bool", "env_int", "env_float", "env_list"}


def python_files(*roots: str) -> list[Path]:
    files = [p for root in roots for p in sorted((REPO / root).rglob("*.py")) if "migrations" not in p.parts]
    return files + ([REPO / "manage.py"] if "config" in roots else [])


def environment_reads(path: Path) -> list[tuple[int, str | None]]:
    """(line, enclosing function) of every read of the process environment in ``path``: ``os.environ``,
    ``os.environb``, ``os.getenv`` or those names imported from ``os``. Setting the default settings module
    (``os.environ.setdefault("DJANGO_SETTINGS_MODULE", ...)``) is not a read."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    names = {"environ", "environb", "getenv"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [(node.lineno, None) for alias in node.names if alias.name in names]
            continue
        if not (isinstance(node, ast.Attribute) and node.attr in names):
            continue
        if not (isinstance(node.value, ast.Name) and node.value.id == "os"):
            continue
        method, call = parents.get(node), parents.get(parents.get(node))
        if (
            isinstance(method, ast.Attribute)
            and method.attr == "setdefault"
            and isinstance(call, ast.Call)
            and call.args
            and isinstance(call.args[0], ast.Constant)
            and call.args[0].value == "DJANGO_SETTINGS_MODULE"
        ):
            continue
        function, up = None, parents.get(node)
        while up is not None and function is None:
            if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef):
                function = up.name
            up = parents.get(up)
        found.append((node.lineno, function))
    return found


def relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def test_the_portal_reads_the_environment_only_in_config_env():
    offenders = [
        f"{relative(path)}:{line}"
        for path in python_files(*PORTAL)
        if relative(path) != "config/env.py"
        for line, _ in environment_reads(path)
    ]
    assert offenders == [], "read the variable in config/settings.py through config/env.py instead"


def test_the_core_reads_the_environment_only_at_its_command_line():
    offenders = [
        f"{relative(path)}:{line} ({function})"
        for path in python_files(CORE)
        if relative(path) not in CORE_CLI
        for line, function in environment_reads(path)
        if (relative(path), function) not in FORWARDED
    ]
    assert offenders == [], "take the value as an argument; the CLI or the portal's settings pass it in"


def test_the_environment_reads_are_found(tmp_path):
    # The two tests above pass on silence: prove the scan sees each form of read (and skips the exemption).
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\nfrom os import getenv\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
        "def f():\n    return os.environ.get('A'), os.getenv('B'), os.environ['C']\n"
    )
    assert environment_reads(sample) == [(2, None), (5, "f"), (5, "f"), (5, "f")]


def settings_variables() -> dict[str, str]:
    """Variable name -> where config/ reads it through an ``env_*`` helper (the name must be a literal)."""
    names: dict[str, str] = {}
    for path in python_files("config"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ENV_HELPERS:
                where = f"{relative(path)}:{node.lineno}"
                first = node.args[0] if node.args else None
                assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                    f"{where}: {node.func.id} needs the variable's name as a literal"
                )
                names[first.value] = where
    return names


def readme_variables() -> set[str]:
    return set(
        re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", (REPO / "README.md").read_text(), flags=re.MULTILINE)
    )


def cli_variables() -> set[str]:
    text = "\n".join((REPO / name).read_text() for name in sorted(CORE_CLI))
    return set(re.findall(r"os\.environ\.get\(\"([A-Z][A-Z0-9_]*)\"", text)) | {"RCB_ALLOW_UNSANDBOXED"}


def test_every_variable_the_settings_read_is_in_the_readme_table():
    variables = settings_variables()
    assert {"DJANGO_SECRET_KEY", "RCB_REAPER_INTERVAL_S", "RCB_BENCH"} <= set(variables)  # the scan works
    missing = sorted(
        f"{name} ({where})" for name, where in variables.items() if name not in readme_variables()
    )
    assert missing == [], "add a row for each to the Configuration table of README.md"


def test_every_variable_in_the_readme_table_is_read_somewhere():
    known = set(settings_variables()) | cli_variables() | READ_BY_LIBRARIES
    assert sorted(readme_variables() - known) == []
