"""The docker lane on a real engine (issue 19 item 2): the examples judged in containers exactly as the local
sandbox judges them, and an environment's own image built from its lock and run.

The engine is the one DOCKER_HOST names, else the private one ``make test`` starts (scripts/docker-engine.sh);
where none answers these tests skip and say why. bench/docker_lane.py runs the same comparison on every
snippet with more mutants, and measures the per-run overhead side by side."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from bench.docker_lane import compare, items, key
from researchcodebench.envs import Lock
from researchcodebench.pset import read_pset
from researchcodebench.runner import Runner
from researchcodebench.sandbox.docker import (
    IMAGE_VENV,
    LABEL_LOCK_HASH,
    ImageRecipe,
    base_lock,
    build_eval_image,
    ensure_default_image,
    image_environment,
    image_name,
)

from .runner_fixtures import checked_local_sandbox, docker_sandbox, eval_python

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "pset"


@pytest.fixture(scope="module")
def docker():
    return docker_sandbox()


@pytest.mark.slow  # examples judged in containers and locally: about two minutes (every one: about five)
def test_the_examples_are_judged_alike_in_containers_and_in_the_local_sandbox(docker, tmp_path):
    """Every other example (every one with RCB_FULL_BATTERY=1, ``make batteries``): its reference run (all its
    references at once), its first snippet's blank body and a mutant: outcome, category and test counts agree.
    bench/docker_lane.py does every snippet: each reference alone, its blank body and mutants (341 items, all
    alike)."""
    every = read_pset(EXAMPLES).tasks
    chosen = every if os.environ.get("RCB_FULL_BATTERY") == "1" else every[::2]
    tasks = [replace(task, snippets=task.snippets[:1]) for task in chosen]
    assert len(every) >= 9 and len(tasks) >= 5
    cases = items(tasks, 1)
    assert {label.split(" ")[0] for _t, _s, label, _c in cases} == {"reference", "blank", "mutant"}
    count, disagreements = compare(
        tasks,
        local=checked_local_sandbox(tmp_path),
        docker=docker,
        mutants_per_snippet=1,
        python=eval_python(),
    )
    assert count == len(cases) >= 4 * len(tasks) - 2
    assert disagreements == []


def test_a_blank_body_fails_and_the_reference_passes_in_a_container(docker):
    task = next(t for t in read_pset(EXAMPLES).tasks if t.id == "rmsnorm")
    snippet = task.snippets[0]
    with Runner(sandbox=docker, environment=eval_python(), warm=False, calibrate=False, workers=1) as runner:
        reference = runner.evaluate(task, snippet, snippet.code)
        blank = runner.evaluate(task, snippet, "        pass")
    assert reference.passed and key(reference)[2:] == (7, 0, 0), reference.reason
    assert not blank.passed and blank.tier == "model", blank.reason


def test_a_locked_environment_runs_in_the_image_built_from_its_lock(docker):
    """A task's own lock (the base plus einops) becomes its own image, built offline from the wheels the
    host fetched with its own package sources; the runner then runs the task in that image."""
    from researchcodebench.envs import default_sources, lock_requirements

    lock = lock_requirements(["einops==0.8.1"], sources=default_sources())
    client = docker.client()
    name = image_name(lock.hash, variant="cpu")
    try:
        client.images.get(name)
    except Exception:  # not there yet: build it (about a minute, once per engine)
        built, _seconds = build_eval_image(
            client,
            lock_text=lock.text,
            variant="cpu",
            recipe=ImageRecipe(base_image=os.environ.get("RCB_BASE_IMAGE") or None),
        )
        assert built == name
    image = client.images.get(name)
    assert image.labels["org.researchcodebench.lock-hash"] == lock.hash
    out = client.containers.run(
        name,
        [
            "python",
            "-c",
            "import einops, sys, torch; print(einops.__version__, sys.prefix, torch.__version__)",
        ],
        network_mode="none",
        remove=True,
    ).decode()
    assert out.split() == ["0.8.1", IMAGE_VENV, "2.13.0+cpu"]
    # The image holds exactly the lock: nothing the lock does not name (no pip, no uv).
    listed = client.containers.run(
        name,
        [
            "python",
            "-c",
            "import importlib.metadata as m, json; print(json.dumps([d.metadata['Name'] for d in m.distributions()]))",
        ],
        network_mode="none",
        remove=True,
    ).decode()
    names = {canonicalize_name(p.split("==")[0]) for p in Lock.from_text(lock.text).packages}
    assert {canonicalize_name(n) for n in json.loads(listed)} == names

    task = next(t for t in read_pset(EXAMPLES).tasks if t.id == "rmsnorm")
    with Runner(sandbox=docker, warm=False, calibrate=False, workers=1) as runner:
        runner.assign_environment(task, image_environment(lock.text))
        verdict = runner.reference(task)
    assert verdict.passed, verdict.reason


def test_the_default_image_is_the_image_of_the_bases_lock(docker):
    from researchcodebench.sandbox.docker import DEFAULT_IMAGE

    image = docker.client().images.get(DEFAULT_IMAGE)
    assert image.labels["org.researchcodebench.lock-hash"] == Lock.from_text(base_lock()).hash
    assert image.labels["org.researchcodebench.torch-variant"] == "cpu"


def test_a_default_image_of_an_older_lock_is_replaced_by_the_image_of_the_base_lock_now(docker):
    """An engine kept from an earlier run held the default tag on an image of an older base lock (the base's
    dependencies resolve to newer releases as the index gains them), and `rcb images` kept it as present.
    A tag whose lock-hash label is not the base's lock is now retagged onto the lock's own image."""
    client = docker.client()
    recipe = ImageRecipe(base_image=os.environ.get("RCB_BASE_IMAGE") or None)
    lock_hash = Lock.from_text(base_lock()).hash
    tag = f"researchcodebench-eval:stale-{uuid.uuid4().hex[:12]}"
    repository, _, name = tag.rpartition(":")
    stale = client.images.get(recipe.base_for("3.11"))  # an image with no lock at all under the tag
    assert (stale.labels or {}).get(LABEL_LOCK_HASH) != lock_hash
    stale.tag(repository, name)
    try:
        _, done, _ = ensure_default_image(client, recipe=recipe, tag=tag)
        assert done == "retagged"
        assert client.images.get(tag).labels[LABEL_LOCK_HASH] == lock_hash
        assert client.images.get(tag).id == client.images.get(image_name(lock_hash, variant="cpu")).id
        assert ensure_default_image(client, recipe=recipe, tag=tag)[1] == "present"
    finally:
        client.images.remove(tag)
