"""Per-task environments (``researchcodebench.envs``, ``evaluate --env auto``): requirements, locks, builds.

The tests that resolve or build with uv are ``slow``; they share one cache folder per test session, so the
torch-based base environment is built once and the pandas and einops environments reuse its packages.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from researchcodebench import envs
from researchcodebench.cli import main
from researchcodebench.envs import (
    BASE_REQUIREMENTS,
    EnvironmentBuildError,
    Lock,
    RequirementsError,
    Sources,
    beyond_base,
    build_environment,
    default_sources,
    environment_size,
    infer_requirements,
    lock_requirements,
    parse_requirements,
    prune_environments,
    sources_from_pip,
    task_requirements,
)
from researchcodebench.pset import read_pset

REPO = Path(__file__).resolve().parents[2]
ENV_PSET = Path(__file__).parent / "fixtures" / "env_pset"
EXAMPLES = REPO / "examples" / "pset"
#: The package sources of this machine's evaluation environment (pip reads them from pip.conf, uv does not).
LOCAL_SOURCES = Sources(
    find_links=("/opt/wheels",),
    index_url="file:///opt/pypi/simple",
    extra_index_urls=("file:///opt/pypi-more/simple",),
)


def _write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


# ------------------------------------------------------------------------------------------ requirements


def test_infers_third_party_imports_but_not_the_base_the_stdlib_or_the_tasks_own_modules(tmp_path):
    task = _write(
        tmp_path / "task",
        {
            "model.py": "import os, json\nimport torch\nimport numpy as np\nfrom sklearn.linear_model import Ridge\n"
            "from PIL import Image\nimport yaml\nimport helper\nfrom utils.io import load\nfrom . import sibling\n",
            "helper.py": "import einops\n",
            "utils/io.py": "import cv2\n",
            "paper2code_test.py": "import ml_collections\ntry:\n    import apex\nexcept ImportError:\n    apex = None\n",
        },
    )
    assert infer_requirements(task) == [
        ("PIL", "pillow"),
        ("cv2", "opencv-python-headless"),
        ("einops", "einops"),
        ("ml_collections", "ml-collections"),
        ("sklearn", "scikit-learn"),
    ]


def test_the_fixture_tasks_need_einops_pandas_and_nothing_beyond_the_base():
    pset = read_pset(ENV_PSET)
    needs = {t.id: task_requirements(t.root).requirements for t in pset.tasks}
    assert needs == {"uses-einops": ("einops",), "uses-pandas": ("pandas",), "base-only": ()}
    assert task_requirements(pset.task("uses-pandas").root).source == "inferred"


def test_every_example_task_needs_only_the_base():
    for task in read_pset(EXAMPLES).tasks:
        assert infer_requirements(task.root) == [], task.id
        listed = task_requirements(task.root, manifest_requirements=task.manifest.requirements)
        assert beyond_base(listed.requirements) == [], task.id


def test_a_requirements_file_wins_over_inference(tmp_path):
    task = _write(
        tmp_path / "task",
        {
            "code.py": "import einops\n",
            "paper2code_requirements.txt": "# pinned by the author\npandas>=2  # why\n",
        },
    )
    found = task_requirements(task, manifest_requirements=["einops"])
    assert (found.requirements, found.source) == (("pandas>=2",), "paper2code_requirements.txt")


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("--index-url https://evil.example/simple", "options such as '--index-url'"),
        ("-r other.txt", "options such as '-r'"),
        ("-e git+https://example.com/x.git", "options such as '-e'"),
        ("evil @ https://example.com/evil.whl", "direct references (evil @ ...)"),
        ("not a requirement!", "not a valid requirement"),
    ],
)
def test_requirements_refuse_anything_but_packages_naming_the_line(line, words):
    with pytest.raises(RequirementsError) as caught:
        parse_requirements(f"einops\n{line}\n", source="requirements.txt")
    assert str(caught.value).startswith("requirements.txt:2: ") and words in str(caught.value)


def test_requirements_the_base_satisfies_are_dropped_so_such_tasks_share_its_lock():
    assert beyond_base(["torch", "torch>=2.0", "numpy", "pandas", "einops", "pandas"]) == ["einops", "pandas"]
    assert beyond_base(["numpy<2"]) == ["numpy<2"]


def test_a_lock_that_is_not_ours_is_refused():
    with pytest.raises(EnvironmentBuildError, match="no environment header"):
        Lock.from_text("torch==2.13.0\n")


def test_prune_removes_environments_unused_too_long_then_the_oldest_beyond_the_budget(tmp_path):
    names = [f"{n:064x}" for n in (1, 2, 3)]
    now = time.time()
    for age_days, name in zip((30, 5, 1), names, strict=True):
        folder = tmp_path / name
        (folder / "lib").mkdir(parents=True)
        (folder / "lib" / "own.bin").write_bytes(b"x" * 100_000)
        (tmp_path / f"{name}.log").write_text("log")
        os.utime(folder, (now - age_days * 86400, now - age_days * 86400))
    (tmp_path / "uv-cache").mkdir()
    one = environment_size(tmp_path / names[2])
    removed = prune_environments(tmp_path, max_age_days=10, max_bytes=one + 1, keep=[])
    assert removed == names[:2]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == sorted(
        [names[2], f"{names[2]}.log", "uv-cache"]
    )
    assert prune_environments(tmp_path, max_bytes=0, keep=[names[2]]) == []


# ------------------------------------------------------------------------------------------ uv (slow)


# ------------------------------------------------------------------------------------------ sources


def test_without_rcb_env_settings_the_sources_are_pips_own_with_pips_precedence(tmp_path):
    config = tmp_path / "pip.conf"
    config.write_text(
        "[global]\nindex-url = https://pypi.example.org/simple\n"
        "extra-index-url = https://a.example.org/simple https://b.example.org/simple\n"
        "find-links = /srv/wheels\ncert = /srv/ca.pem\n"
    )
    environ = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PIP_CONFIG_FILE": str(config)}
    from_file = sources_from_pip(environ=environ)
    assert from_file.index_url == "https://pypi.example.org/simple"
    assert from_file.extra_index_urls == ("https://a.example.org/simple", "https://b.example.org/simple")
    assert from_file.find_links == ("/srv/wheels",)
    assert from_file.cert == "/srv/ca.pem"
    assert from_file.describe().startswith("package sources (pip's configuration): index https://pypi.exa")
    # A PIP_* variable wins over every config file, as in pip.
    overridden = sources_from_pip(environ={**environ, "PIP_FIND_LINKS": "/opt/a /opt/b"})
    assert overridden.find_links == ("/opt/a", "/opt/b") and overridden.index_url == from_file.index_url
    # Any RCB_ENV_* setting replaces pip's configuration entirely.
    given = default_sources(find_links=["/w"])
    assert (given.find_links, given.index_url, given.extra_index_urls, given.origin) == (
        ("/w",),
        None,
        (),
        "RCB_ENV_*",
    )


def test_uv_gets_the_hosts_ca_and_proxy_settings_and_nothing_else(monkeypatch, tmp_path):
    for name, value in {
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "HTTPS_PROXY": "http://proxy.internal:3128",
        "no_proxy": "localhost",
        "UV_INDEX_URL": "https://evil.example.org/simple",
        "PIP_INDEX_URL": "https://evil.example.org/simple",
        "RCB_SECRET": "x",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    env = envs._uv_env(str(tmp_path), cert="/srv/ignored.pem")
    assert env["SSL_CERT_FILE"] == "/etc/ssl/certs/ca-certificates.crt"
    assert env["HTTPS_PROXY"] == "http://proxy.internal:3128" and env["no_proxy"] == "localhost"
    assert not {"UV_INDEX_URL", "PIP_INDEX_URL", "RCB_SECRET"} & set(env)
    # pip's cert fills in only where the host names no CA of its own.
    monkeypatch.delenv("SSL_CERT_FILE")
    assert envs._uv_env(str(tmp_path), cert="/srv/ca.pem")["SSL_CERT_FILE"] == "/srv/ca.pem"


@pytest.fixture(scope="session")
def env_root(tmp_path_factory):
    if shutil.which("bwrap") is None or not Path("/opt/wheels").is_dir():
        pytest.skip("needs bubblewrap and the local CPU torch wheel (/opt/wheels)")
    return tmp_path_factory.mktemp("envs")


@pytest.mark.slow
def test_a_lock_is_deterministic_named_by_its_hash_and_pins_the_cpu_torch(env_root):
    first = lock_requirements(["einops"], sources=LOCAL_SOURCES, cache_root=str(env_root))
    second = lock_requirements(["einops", "torch"], sources=LOCAL_SOURCES, cache_root=str(env_root))
    assert first == second and first.hash == Lock.from_text(first.text).hash
    assert "torch==2.13.0+cpu \\" in first.text and "--hash=sha256:" in first.text
    assert {"einops==0.8.2", "torch==2.13.0+cpu"} <= set(first.packages)
    base = lock_requirements([], sources=LOCAL_SOURCES, cache_root=str(env_root))
    assert base.hash != first.hash and "einops" not in base.text
    assert len(BASE_REQUIREMENTS) == 4


def _evaluate(
    capsys, monkeypatch, env_root: Path, pset: Path, *extra: str, status: int = 0
) -> tuple[dict, str]:
    monkeypatch.setenv("RCB_ENV_DIR", str(env_root))
    monkeypatch.setenv("RCB_ENV_FIND_LINKS", ",".join(LOCAL_SOURCES.find_links))
    monkeypatch.setenv("RCB_ENV_INDEX_URL", LOCAL_SOURCES.index_url or "")
    monkeypatch.setenv("RCB_ENV_EXTRA_INDEX_URLS", " ".join(LOCAL_SOURCES.extra_index_urls))
    exited = main(["evaluate", str(pset), "--oracle", "--env", "auto", "--no-cache", "--json", *extra])
    out, err = capsys.readouterr()
    assert exited == status, err
    return json.loads(out), err


@pytest.mark.slow
def test_env_auto_runs_each_task_in_its_own_environment_and_reuses_them_the_second_time(
    env_root, capsys, monkeypatch
):
    first, _ = _evaluate(capsys, monkeypatch, env_root, ENV_PSET)
    assert [v["outcome"] for v in first["verdicts"]] == ["passed"] * 3
    hashes = {task: e["hash"] for task, e in first["scores"]["environments"].items()}
    assert len(set(hashes.values())) == 3
    # Each ran in its own interpreter (the verdict names the environment it ran in).
    assert len({v["environment"] for v in first["verdicts"]}) == 3
    second, err = _evaluate(capsys, monkeypatch, env_root, ENV_PSET)
    assert [v["outcome"] for v in second["verdicts"]] == ["passed"] * 3
    assert [e["built"] for e in second["scores"]["environments"].values()] == [False] * 3
    assert err.count(" reused; ") == 3
    # Packages are hardlinked from uv's cache: an environment holds a few megabytes of its own.
    assert all(environment_size(env_root / h) < 50 * 1024 * 1024 for h in hashes.values())


@pytest.mark.slow
def test_env_auto_with_no_rcb_env_setting_builds_from_pips_configuration(
    env_root, capsys, monkeypatch, tmp_path
):
    """A task that needs a package beyond the base, on a host whose pip reaches the index (here through
    a TLS proxy whose CA is in the system bundle): no RCB_ENV_* set, a fresh environment folder."""
    if not envs.pip_config():
        pytest.skip("pip on this host has no configuration to take the sources from")
    for name in ("RCB_ENV_FIND_LINKS", "RCB_ENV_INDEX_URL", "RCB_ENV_EXTRA_INDEX_URLS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RCB_ENV_DIR", str(tmp_path / "envs"))
    status = main(
        [
            "evaluate",
            str(ENV_PSET),
            "--oracle",
            "--env",
            "auto",
            "--no-cache",
            "--json",
            "--tasks",
            "uses-einops",
        ]
    )
    out, err = capsys.readouterr()
    assert status == 0, err
    data = json.loads(out)
    assert [v["outcome"] for v in data["verdicts"]] == ["passed"]
    assert data["scores"]["environments"]["uses-einops"]["built"] is True
    assert "package sources (pip's configuration)" in err
    assert data["scores"]["environment_sources"].startswith("package sources (pip's configuration)")


@pytest.mark.slow
def test_an_unresolvable_requirement_is_an_infrastructure_error_naming_the_package(
    env_root, capsys, monkeypatch, tmp_path
):
    pset = tmp_path / "pset"
    shutil.copytree(ENV_PSET, pset)
    (pset / "base-only" / "task.yaml").write_text("requirements:\n  - no-such-package-rcb==1.0\n")
    # Some verdicts are infrastructure errors: exit 3 (researchcodebench/evaluate_cli.py).
    data, err = _evaluate(
        capsys, monkeypatch, env_root, pset, "--tasks", "uses-pandas", "base-only", status=3
    )
    by_task = {v["task"]: v for v in data["verdicts"]}
    broken = by_task["base-only"]
    assert (broken["outcome"], broken["tier"], broken["category"]) == (
        "infra_error",
        "infrastructure",
        "missing_dependency",
    )
    assert "no-such-package-rcb" in broken["reason"] and "not found" in broken["reason"]
    assert data["scores"]["environments"]["base-only"]["package"] == "no-such-package-rcb"
    assert (
        "environment of base-only: the task's environment cannot be built: package 'no-such-package-rcb'"
        in err
    )
    # Not charged to the model: the other tasks pass and the broken one is left out of the rates.
    assert by_task["uses-pandas"]["outcome"] == "passed"
    assert data["scores"]["scored"] == 1 and data["scores"]["line_rate"]["mean"] == 100.0


@pytest.mark.slow
def test_a_failed_build_leaves_no_environment_and_keeps_its_log(env_root):
    lock = lock_requirements(["einops"], sources=LOCAL_SOURCES, cache_root=str(env_root))
    # The lock names a wheel hash that no source serves: the install must refuse it.
    forged = Lock.from_text(lock.text.replace("--hash=sha256:5405", "--hash=sha256:0000"))
    with pytest.raises(EnvironmentBuildError) as caught:
        build_environment(forged, cache_root=env_root, sources=LOCAL_SOURCES)
    assert caught.value.package == "einops"
    assert not (env_root / forged.hash).exists() and not (env_root / f"{forged.hash}.building").exists()
    assert Path(caught.value.log_path or "").read_text().count("$ ") >= 2


# ------------------------------------------------------------------------------------------ real papers' code


def test_a_vcs_line_is_left_out_with_how_to_replace_it_and_its_imports_are_inferred(tmp_path):
    task = _write(
        tmp_path / "task",
        {
            "requirements.txt": "einops==0.8.2\ngit+https://github.com/org/lib.git@0123abc#egg=lib\n"
            "-e git+https://github.com/org/other.git#egg=other\n",
            "model.py": "import einops\nimport pandas as pd\n",
        },
    )
    needs = task_requirements(task)
    assert needs.requirements == ("einops==0.8.2", "pandas")
    assert needs.source == "requirements.txt and inferred"
    assert len(needs.notes) == 2 and needs.notes[0].startswith("requirements.txt:2: 'git+https://github.com/")
    assert "replace it with the package's released version" in needs.notes[0]


def test_pandas_without_a_parquet_call_needs_no_engine():
    from researchcodebench.envs import infer_requirements

    folder = Path(__file__).parent / "fixtures" / "env_pset" / "uses-pandas"
    assert ("pandas.read_parquet", "pyarrow") not in infer_requirements(folder)


def test_a_parquet_call_brings_its_engine_in_a_task(tmp_path):
    from researchcodebench.envs import infer_requirements

    task = _write(tmp_path / "t", {"data.py": "import pandas as pd\nframe = pd.read_parquet('x.parquet')\n"})
    assert infer_requirements(task) == [("pandas", "pandas"), ("pandas.read_parquet", "pyarrow")]


def test_a_tasks_own_pin_wins_over_the_base_and_the_rest_of_the_base_follows_it():
    from researchcodebench.envs import effective_base

    assert effective_base(["einops"]) == list(BASE_REQUIREMENTS)
    assert effective_base(["numpy==1.26.4"]) == ["torch==2.13.0+cpu", "scipy", "PyYAML"]
    # torch keeps the shared CPU build
    assert effective_base(["torch==2.1.0"])[0] == "torch==2.13.0+cpu"


@pytest.mark.slow
def test_a_task_pinning_an_older_numpy_locks_with_it(env_root):
    lock = lock_requirements(["numpy==1.26.4"], sources=LOCAL_SOURCES, cache_root=str(env_root))
    assert "numpy==1.26.4" in lock.packages and "torch==2.13.0+cpu" in lock.packages


def test_an_unpinned_torchvision_is_paired_with_a_build_made_for_the_environments_torch():
    from researchcodebench.envs import companion_bases

    assert companion_bases(["einops"], BASE_REQUIREMENTS) == [list(BASE_REQUIREMENTS)]
    tries = companion_bases(["torchvision"], BASE_REQUIREMENTS)
    assert tries[0][0] == "torch==2.13.0+cpu" and "torchvision==0.28.0+cpu" in tries[0]
    assert ["torch==2.14.1", "torchvision==0.29.1"] == [tries[1][0], tries[1][-1]]
    # A task that pins its companion itself is taken at its word.
    assert companion_bases(["torchvision==0.20.0"], BASE_REQUIREMENTS) == [list(BASE_REQUIREMENTS)]


@pytest.mark.slow
def test_torchvision_locks_with_a_torch_it_was_built_for(env_root):
    """This machine's sources (pip's configuration: PyPI through the TLS proxy and the local indexes) hold
    no torchvision for the CPU torch 2.13.0, and torchvision 0.29.1 with torch 2.14.1 (the env skill's
    machine page): the lock takes that pair."""
    if not envs.pip_config():
        pytest.skip("pip on this host has no configuration to take the sources from")
    lock = lock_requirements(["torchvision"], sources=sources_from_pip(), cache_root=str(env_root))
    torch = next(p for p in lock.packages if p.startswith("torch=="))
    vision = next(p for p in lock.packages if p.startswith("torchvision=="))
    assert (torch, vision) in {
        ("torch==2.13.0+cpu", "torchvision==0.28.0+cpu"),
        ("torch==2.14.1", "torchvision==0.29.1"),
    }
