"""``python -m researchcodebench images``: build the docker sandbox's evaluation images on this host.

Without ``--lock`` it builds the default image (``DEFAULT_IMAGE``: the image of the shared base's lock, what
tasks without their own environment run in); with ``--lock FILE`` the image of each environment lock given
(``researchcodebench-eval:<lock hash[:16]>-<variant>``). An image the engine already has is kept unless
``--rebuild``; the default image only while its lock-hash label is the base's lock as the package sources
resolve it now (the base's dependencies move with the index), else it is retagged or rebuilt. The base
image comes from ``--base-image`` (else ``RCB_BASE_IMAGE``, else the public ``python:<version>-slim``) and
the lock's wheels from this host's package sources (pip's configuration, or ``RCB_ENV_*``; docs/sandbox.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .envs import EnvironmentBuildError, Lock
from .sandbox.base import SandboxUnavailable


class _Failure(Exception):
    pass


def _cmd_images(args: argparse.Namespace) -> int:
    from .sandbox.docker import (
        ImageBuildError,
        ImageRecipe,
        build_eval_image,
        check_variant,
        engine_client,
        ensure_default_image,
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
        if not args.lock:
            tag, done, seconds = ensure_default_image(
                client, variant=variant, recipe=recipe, rebuild=args.rebuild
            )
            print(f"{done} {tag}" + (f" in {seconds:.0f} s" if done == "built" else ""))
            return 0
        for path in args.lock:
            try:
                with open(path, encoding="utf-8") as fh:
                    lock = Lock.from_text(fh.read())
            except (OSError, EnvironmentBuildError) as exc:
                raise _Failure(f"{path}: {exc}") from exc
            name = image_name(lock.hash, variant=variant)
            if not args.rebuild and image_present(client, name):
                print(f"present {name}")
                continue
            # Read pip's configuration once, for the first image that is built.
            recipe = recipe.with_sources()
            print(f"building {name} on {recipe.base_for(lock.python)}", flush=True)
            built, seconds = build_eval_image(client, lock_text=lock.text, variant=variant, recipe=recipe)
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
