"""`python manage.py build_eval_images [--dry-run] [--cuda-variant cu128] [--base-url URL]`: build the
docker sandbox's evaluation image of every task version's environment lock that the engine lacks
(docs/sandbox.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contributions.models import TaskVersion
from researchcodebench.envs import EnvironmentBuildError, Lock
from researchcodebench.sandbox.base import SandboxUnavailable
from researchcodebench.sandbox.docker import (
    CPU_VARIANT,
    DEFAULT_CUDA_VARIANT,
    ImageBuildError,
    ImageRecipe,
    build_eval_image,
    check_variant,
    ensure_default_image,
    image_name,
)
from researchcodebench.sandbox.docker import engine_client as docker_engine_client


@dataclass
class WantedImage:
    """One image to have: a lock, a torch build, and the task versions that run in it."""

    name: str
    lock_text: str
    variant: str
    versions: list[str] = field(default_factory=list)


def wanted_images(*, cuda_variant: str) -> tuple[list[WantedImage], list[str]]:
    """The images the catalogue's locks need (a CPU image per lock, plus a CUDA one where a task version
    of that lock needs a GPU), and a problem line per version whose stored lock is unusable."""
    wanted: dict[str, WantedImage] = {}
    problems: list[str] = []
    versions = (
        TaskVersion.objects.exclude(environment_lock="")
        .select_related("task")
        .order_by("environment_hash", "task__key", "number")
    )
    for version in versions:
        label = f"{version.task.key} v{version.number}"
        try:
            lock = Lock.from_text(version.environment_lock)
        except EnvironmentBuildError as exc:
            problems.append(f"{label}: {exc}")
            continue
        if lock.hash != version.environment_hash:
            problems.append(
                f"{label}: the stored lock does not match its hash {version.environment_hash[:16]}"
            )
            continue
        for variant in (CPU_VARIANT, cuda_variant) if version.needs_gpu else (CPU_VARIANT,):
            name = image_name(lock.hash, variant=variant)
            wanted.setdefault(name, WantedImage(name, lock.text, variant)).versions.append(label)
    return sorted(wanted.values(), key=lambda w: w.name), problems


def engine_client(base_url: str | None) -> Any:
    """A client of the engine at ``base_url`` (else the one DOCKER_HOST names); ``CommandError`` if
    unreachable."""
    try:
        return docker_engine_client(base_url)
    except SandboxUnavailable as exc:
        raise CommandError(str(exc)) from exc


class Command(BaseCommand):
    help = (
        "Build the evaluation image (docker/eval.Dockerfile) of every task version's environment lock that "
        "the Docker engine lacks: researchcodebench-eval:<lock hash[:16]>-cpu, and -<cuda variant> for locks "
        "of task versions that need a GPU. --dry-run lists what would be built."
    )
    # Tests hand in a client standing in for the engine, and a recipe that fetches no wheels.
    stealth_options = ("client", "recipe")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="print what would be built, build nothing")
        parser.add_argument(
            "--cuda-variant",
            default=DEFAULT_CUDA_VARIANT,
            help=f"torch CUDA build of the GPU images (default {DEFAULT_CUDA_VARIANT}; the docker sandbox's "
            "cuda_variant must match)",
        )
        parser.add_argument("--base-url", default=None, help="the engine's URL (default: DOCKER_HOST)")
        parser.add_argument(
            "--default",
            action="store_true",
            help="also build the default image (RCB_DOCKER_IMAGE's default: the shared base's lock) if missing",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        import docker

        try:
            cuda_variant = check_variant(options["cuda_variant"])
        except ValueError as exc:
            raise CommandError(f"--cuda-variant: {exc}") from exc
        if cuda_variant == CPU_VARIANT:
            raise CommandError("--cuda-variant: name a CUDA build such as cu128, not cpu")
        wanted, problems = wanted_images(cuda_variant=cuda_variant)
        for problem in problems:
            self.stderr.write(f"skipped {problem}")
        client = options.get("client") or engine_client(options["base_url"])
        recipe = options.get("recipe") or ImageRecipe(
            base_image=settings.RCB_BASE_IMAGE or None, python=settings.RCB_BASE_PYTHON or None
        )
        missing: list[WantedImage] = []
        for image in wanted:
            try:
                client.images.get(image.name)
            except docker.errors.ImageNotFound:
                missing.append(image)
                continue
            except docker.errors.DockerException as exc:
                raise CommandError(f"cannot inspect {image.name}: {exc}") from exc
            self.stdout.write(f"present {image.name}")
        failed: list[str] = []
        for image in missing:
            tasks = ", ".join(image.versions)
            if options["dry_run"]:
                self.stdout.write(f"would build {image.name} (torch {image.variant}) for {tasks}")
                continue
            self.stdout.write(f"building {image.name} (torch {image.variant}) for {tasks}")
            try:
                name, seconds = build_eval_image(
                    client, lock_text=image.lock_text, variant=image.variant, recipe=recipe
                )
            except (ImageBuildError, SandboxUnavailable) as exc:
                failed.append(image.name)
                self.stderr.write(f"{exc}\n{getattr(exc, 'log_tail', '')}".rstrip())
                continue
            self.stdout.write(f"built {name} in {seconds:.0f} s")
        if options["default"] and not options["dry_run"]:
            failed += self._default_image(client, recipe)
        verb = "to build" if options["dry_run"] else "built"
        self.stdout.write(
            f"{len(wanted)} image(s) wanted, {len(wanted) - len(missing)} present, "
            f"{len(missing) - len(failed)} {verb}"
        )
        if failed or problems:
            raise CommandError(
                f"{len(failed)} image(s) failed to build, {len(problems)} task version(s) skipped (see above)"
            )

    def _default_image(self, client: Any, recipe: ImageRecipe) -> list[str]:
        """Make the default image the image of the base's lock (``ensure_default_image``); the names that
        failed."""

        from researchcodebench.sandbox.docker import DEFAULT_IMAGE

        try:
            name, done, seconds = ensure_default_image(client, recipe=recipe)
        except (ImageBuildError, SandboxUnavailable) as exc:
            self.stderr.write(f"{exc}\n{getattr(exc, 'log_tail', '')}".rstrip())
            return [DEFAULT_IMAGE]
        self.stdout.write(
            f"{done} {name} (the shared base's lock)" + (f" in {seconds:.0f} s" if done == "built" else "")
        )
        return []
