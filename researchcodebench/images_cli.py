"""``python -m researchcodebench images``: build the docker sandbox's evaluation images on this host.

Without ``--lock`` it builds the default image (``DEFAULT_IMAGE``: the image of the shared base's lock, what
tasks without their own environment run in); with ``--lock FILE`` the image of each environment lock given
(``researchcodebench-eval:<lock hash[:16]>-<variant>``). An image the engine already has is kept unless
``--rebuild``. The base image comes from ``--base-image`` (else ``RCB_BASE_IMAGE``, else the public
``python:<version>-slim``) and the lock's wheels from this host's package sources (pip's configuration, or
``RCB_ENV_*``; docs/sandbox.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .envs import DEFAULT_PYTHON, EnvironmentBuildError, Lock
from .sandbox.base import SandboxUnavailable


class _Failure(Exception):
    pass


def _cmd_images(args: argparse.Namespace) -> int:
    from .sandbox.docker import (
        CPU_VARIANT,
        DEFAULT_GPU_IMAGE,
        DEFAULT_IMAGE,
        ImageBuildError,
        ImageRecipe,
        build_default_image,
        build_eval_image,
        check_variant,
        engine_client,
        image_name,
        image_present,
    )

    try:
        variant = check_variant(args.variant)
        recipe = ImageRecipe(
            base_image=args.base_image or os.environ.get("RCB_BASE_IMAGE") or None,
            python=args.base_python or os.environ.get("RCB_BASE_PYTHON") or None,
            cert=os.environ.get("SSL_CERT_FILE") or None,
        )
        client = engine_client(args.base_url, timeout_s=1800)
        jobs: list[tuple[str, str | None]] = []
        if args.lock:
            for path in args.lock:
                try:
                    with open(path, encoding="utf-8") as fh:
                        lock = Lock.from_text(fh.read())
                except (OSError, EnvironmentBuildError) as exc:
                    raise _Failure(f"{path}: {exc}") from exc
                jobs.append((image_name(lock.hash, variant=variant), lock.text))
        else:
            jobs.append((DEFAULT_IMAGE if variant == CPU_VARIANT else DEFAULT_GPU_IMAGE, None))
        for name, lock_text in jobs:
            if not args.rebuild and image_present(client, name):
                print(f"present {name}")
                continue
            # Read pip's configuration once, for the first image that is built.
            recipe = recipe.with_sources()
            python = Lock.from_text(lock_text).python if lock_text else DEFAULT_PYTHON
            print(f"building {name} on {recipe.base_for(python)}", flush=True)
            if lock_text is None:
                built, seconds = build_default_image(client, variant=variant, recipe=recipe)
            else:
                built, seconds = build_eval_image(client, lock_text=lock_text, variant=variant, recipe=recipe)
            print(f"built {built} in {seconds:.0f} s")
    except ImageBuildError as exc:
        sys.stderr.write(f"error: {exc}\n{exc.log_tail}".rstrip() + "\n")
        return 1
    except (_Failure, SandboxUnavailable, ValueError, EnvironmentBuildError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    except Exception as exc:  # the SDK missing, or anything the engine says
        sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n")
        return 1
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "images",
        help="build the docker sandbox's evaluation images (the default one, or those of given locks)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    p.add_argument("--lock", nargs="+", metavar="FILE", help="environment lock files (default: the base's)")
    p.add_argument(
        "--variant", default="cpu", help="torch build: cpu (default) or a CUDA variant such as cu128"
    )
    p.add_argument(
        "--base-image", help="the image to build on (default: RCB_BASE_IMAGE, else python:3.11-slim)"
    )
    p.add_argument("--base-python", help="the interpreter on the base's PATH (default python<lock's Python>)")
    p.add_argument("--base-url", help="the engine's URL (default: DOCKER_HOST)")
    p.add_argument("--rebuild", action="store_true", help="build even when the engine has the image")
    p.set_defaults(handler=_cmd_images)
