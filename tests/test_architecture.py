"""The dependency direction of DESIGN.md, checked by import-linter over the real import graph."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_layers_the_plain_python_core_and_no_arrow_into_config_hold():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--config", ".importlinter"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken." in result.stdout


# ------------------------------------------------------------------ no import loop inside an app

APPS = ("contributions", "evaluation", "leaderboard")


def import_loops(package: str) -> list[list[str]]:
    """The import loops (strongly connected groups of modules, function-level imports included) inside
    ``package``, but for the one loop an app with Celery work has by design: its tasks call its services,
    and its services send its tasks (after commit) through ``dispatch``, the one module that imports them."""
    import grimp

    graph = grimp.build_graph(package, cache_dir=None)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        imported = {m for m in graph.find_modules_directly_imported_by(module) if m.startswith(package + ".")}
        if module == f"{package}.dispatch":
            imported.discard(f"{package}.tasks")
        edges[module] = imported
    return strongly_connected(edges)


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's groups of more than one node of the graph ``edges`` (node -> nodes it points to)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


@pytest.mark.parametrize("app", APPS)
def test_no_import_loop_inside_an_app(app):
    assert import_loops(app) == [], "an import loop inside the app: move the shared part to its own module"


def test_the_loop_check_finds_a_loop():
    # The test above passes on silence: prove the search sees a loop, and a lone module is none.
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"a"}, "b": set()}) == []


# ------------------------------------------------------------------ the catalogue has one writer

#: Rows only ``contributions`` may create or change (DESIGN.md: one owner per concept).
CATALOGUE_MODELS = frozenset(
    {"Paper", "Task", "TaskVersion", "Snippet", "Release", "ReleaseEntry", "FileBlob"}
)
WRITE_METHODS = frozenset(
    {"create", "bulk_create", "update", "get_or_create", "update_or_create", "delete", "bulk_update", "save"}
)
#: Relations that lead from any row to catalogue rows (``run.release``, ``version.snippets``...): a write
#: called on one of them writes the catalogue whatever the row it starts from.
CATALOGUE_RELATIONS = frozenset(
    {
        "paper",
        "task",
        "task_version",
        "task_versions",
        "snippet",
        "snippets",
        "release",
        "releases",
        "versions",
        "entries",
        "release_entries",
        "parent",
        "children",
    }
)
#: Query results that are plain values, not rows: a name bound to one is not a catalogue row.
_VALUE_METHODS = frozenset({"values", "values_list", "count", "exists", "aggregate"})
_WRAPPERS = frozenset({"list", "tuple", "set", "dict", "sorted", "reversed", "next", "iter", "enumerate"})
#: Apps whose code may not write the catalogue (management commands count as their app).
NON_CATALOGUE_APPS = ("evaluation", "leaderboard", "config")


class _CatalogueWrites(ast.NodeVisitor):
    """Finds writes to catalogue rows in one module, as far as the source shows them.

    A write is a call of a method in ``WRITE_METHODS`` on: a catalogue model or anything derived from it
    (``Paper.objects.filter(...).update()``, ``Paper(...).save()``); a name bound, in the same function, to
    such a value, to a loop or comprehension over one, or declared with a catalogue model in its
    annotation; or a relation in ``CATALOGUE_RELATIONS`` (``run.release.save()``).
    """

    def __init__(self) -> None:
        self.models: set[str] = set()  # local names of catalogue model classes
        self.modules: set[str] = {"contributions.models"}  # dotted names of the models module
        self.scopes: list[set[str]] = [set()]  # names bound to catalogue rows, per function
        self.found: list[tuple[int, str]] = []

    def _dotted(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return f"{self._dotted(node.value)}.{node.attr}"
        return ""

    def _is_model(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.models
        if isinstance(node, ast.Attribute) and node.attr in CATALOGUE_MODELS:
            return self._dotted(node.value) in self.modules
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
            return any(part.strip() in self.models for part in node.value.replace("|", ",").split(","))
        return False

    def _derived(self, node: ast.expr, *, rows_only: bool = False) -> bool:
        """Whether ``node`` is a catalogue model, row or queryset (``rows_only``: not a value query)."""
        if self._is_model(node):
            return True
        if isinstance(node, ast.Name):
            return any(node.id in scope for scope in self.scopes)
        if isinstance(node, ast.Attribute):
            if node.attr in CATALOGUE_RELATIONS:
                return True
            return self._derived(node.value, rows_only=rows_only)
        if isinstance(node, ast.Subscript):
            return self._derived(node.value, rows_only=rows_only)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _WRAPPERS:
                return any(self._derived(arg, rows_only=rows_only) for arg in node.args)
            if rows_only and isinstance(func, ast.Attribute) and func.attr in _VALUE_METHODS:
                return False
            return self._derived(func, rows_only=rows_only)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return any(self._derived(gen.iter, rows_only=rows_only) for gen in node.generators)
        if isinstance(node, (ast.Tuple, ast.List)):
            return any(self._derived(elt, rows_only=rows_only) for elt in node.elts)
        if isinstance(node, ast.BoolOp):
            return any(self._derived(value, rows_only=rows_only) for value in node.values)
        if isinstance(node, ast.IfExp):
            return self._derived(node.body, rows_only=rows_only) or self._derived(
                node.orelse, rows_only=rows_only
            )
        return False

    def _bind(self, target: ast.expr) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.scopes[-1].add(node.id)

    # imports ------------------------------------------------------------------------------------------
    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if node.module == "contributions.models" and alias.name in CATALOGUE_MODELS:
                self.models.add(alias.asname or alias.name)
            if node.module == "contributions" and alias.name == "models":
                self.modules.add(alias.asname or "models")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "contributions.models" and alias.asname:
                self.modules.add(alias.asname)

    # bindings -----------------------------------------------------------------------------------------
    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scopes.append(set())
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if arg.annotation is not None and any(self._is_model(n) for n in ast.walk(arg.annotation)):
                self.scopes[-1].add(arg.arg)
        # Bindings first, so that a use before the binding line (a loop body) still counts.
        for child in ast.walk(node):
            if isinstance(child, ast.Assign) and self._derived(child.value, rows_only=True):
                for target in child.targets:
                    self._bind(target)
            elif isinstance(child, (ast.AnnAssign, ast.NamedExpr)) and child.value is not None:
                if self._derived(child.value, rows_only=True):
                    self._bind(child.target)
            elif isinstance(child, (ast.For, ast.AsyncFor, ast.comprehension)):
                if self._derived(child.iter, rows_only=True):
                    self._bind(child.target)
            elif isinstance(child, ast.withitem) and child.optional_vars is not None:
                if self._derived(child.context_expr, rows_only=True):
                    self._bind(child.optional_vars)
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(self.scopes) == 1 and self._derived(node.value, rows_only=True):
            for target in node.targets:
                self._bind(target)
        self.generic_visit(node)

    # writes -------------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in WRITE_METHODS and self._derived(func.value):
            self.found.append((node.lineno, ast.unparse(func)))
        self.generic_visit(node)


def catalogue_writes(source: str) -> list[tuple[int, str]]:
    """(line, call) of every write to a catalogue row that ``source`` makes (see ``_CatalogueWrites``)."""
    visitor = _CatalogueWrites()
    visitor.visit(ast.parse(source))
    return visitor.found


def _non_catalogue_modules() -> list[Path]:
    modules = []
    for app in NON_CATALOGUE_APPS:
        for path in sorted((REPO / app).rglob("*.py")):
            parts = path.relative_to(REPO).parts
            if "migrations" in parts or "tests" in parts:
                continue
            modules.append(path)
    return modules


def test_only_contributions_writes_catalogue_rows():
    modules = _non_catalogue_modules()
    assert any(p.parts[-3:] == ("evaluation", "services", "published.py") for p in modules)
    offences = [
        f"{path.relative_to(REPO)}:{line}: {call}"
        for path in modules
        for line, call in catalogue_writes(path.read_text(encoding="utf-8"))
    ]
    assert offences == [], "catalogue rows written outside contributions (call its services):\n" + "\n".join(
        offences
    )


@pytest.mark.parametrize(
    "source",
    [
        "from contributions.models import Paper\nPaper.objects.create(key='x')\n",
        "from contributions.models import Release as R\ndef f():\n    R.objects.filter(name='x').update(title='y')\n",
        "from contributions import models as cm\ncm.Snippet.objects.bulk_create([])\n",
        "import contributions.models\ncontributions.models.FileBlob.objects.all().delete()\n",
        "from contributions.models import Release\n"
        "def f():\n    release = Release.objects.get(name='x')\n    release.save()\n",
        "from contributions.models import Paper\n"
        "def f(keys):\n    existing = {p.key: p for p in Paper.objects.filter(key__in=keys)}\n"
        "    row = existing.get('a')\n    row.save(update_fields=['title'])\n",
        "from contributions.models import TaskVersion\n"
        "def f():\n    for version in TaskVersion.objects.all():\n        version.delete()\n",
        "from contributions.models import Paper\ndef f(row: Paper | None):\n    row.save()\n",
        "def f(run):\n    run.release.save()\n",
        "def f(version):\n    version.snippets.create(name='x', lines=1)\n",
        "from contributions.models import Task\nTask(key='x').save()\n",
    ],
)
def test_the_catalogue_writer_check_finds_a_write(source):
    # Each source writes once, on its last line.
    assert [line for line, _call in catalogue_writes(source)] == [source.count("\n")]


@pytest.mark.parametrize(
    "source",
    [
        "from contributions.models import Paper\nPaper.objects.filter(key='x').first()\n",
        "from evaluation.models import EvaluationRun\nEvaluationRun.objects.filter(pk=1).update(status='x')\n",
        "from contributions.models import Snippet\n"
        "def f(version):\n    ids = dict(Snippet.objects.values_list('name', 'id'))\n    ids.update({})\n",
        "from contributions.services import release_get_or_create\nrelease_get_or_create(name='x')\n",
        "def f(run):\n    run.save(update_fields=['status'])\n",
    ],
)
def test_the_catalogue_writer_check_lets_reads_and_other_rows_pass(source):
    assert catalogue_writes(source) == []


# ------------------------------------------------------------------ one shape per app (issue 35)

#: the most lines an app module may have (docs/architecture.md): a longer one holds several rooms
MODULE_LINES = 900


def app_modules() -> list[Path]:
    return sorted(
        p for app in APPS for p in (REPO / app).rglob("*.py") if "migrations" not in p.relative_to(REPO).parts
    )


def test_no_app_module_is_longer_than_the_limit():
    long = {
        str(p.relative_to(REPO)): n
        for p in app_modules()
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}, f"split these along their sections (at most {MODULE_LINES} lines a module)"


def private_imports(path: Path, *, root: Path = REPO) -> list[str]:
    """The ``from X import _name`` lines of ``path`` that take a private name from a module of the apps or the
    core: a name another module needs is part of its interface, so it is public."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        if node.module.split(".")[0] not in (*APPS, "researchcodebench"):
            continue
        found += [
            f"{path.relative_to(root)}:{node.lineno}: from {node.module} import {alias.name}"
            for alias in node.names
            if alias.name.startswith("_") and not alias.name.startswith("__")
        ]
    return found


def test_no_app_module_takes_a_private_name_from_another():
    found = [line for path in app_modules() for line in private_imports(path)]
    assert found == [], "make the name public or move it:\n" + "\n".join(found)


def test_the_private_import_check_finds_one(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from contributions.services.proposals import _lock, proposal_transition\n"
        "from os import _exit\n"
        "def f():\n    from evaluation.tasks import _private\n"
    )
    assert private_imports(module, root=tmp_path) == [
        "m.py:1: from contributions.services.proposals import _lock",
        "m.py:4: from evaluation.tasks import _private",
    ]


@pytest.mark.parametrize("app", APPS)
def test_only_the_apps_dispatch_module_imports_its_tasks(app):
    """An app's Celery tasks are sent from one place (``dispatch``), which services call: the only loop
    left is tasks -> services -> dispatch -> tasks. An app without Celery work has neither module."""
    import grimp

    graph = grimp.build_graph(app, cache_dir=None)
    tasks = f"{app}.tasks"
    if tasks not in graph.modules:
        assert f"{app}.dispatch" not in graph.modules
        return
    importers = {m for m in graph.find_modules_that_directly_import(tasks) if m.startswith(app + ".")}
    assert importers == {f"{app}.dispatch"}, f"send {app}'s tasks through {app}/dispatch.py"
