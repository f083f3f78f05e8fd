# The evaluation environment as a container image: what a task's paper2code_test.py runs in under the
# docker sandbox (researchcodebench/sandbox/docker.py, docs/sandbox.md).
#
# A task version with a locked environment (docs/environments.md) runs in the image built from its lock:
# `python manage.py build_eval_images` writes a small build context (this file, requirements-bench.txt and
# the lock as environment.lock) and builds researchcodebench-eval:<lock hash[:16]>-<variant> with
#   --build-arg LOCK_HASH=<sha256 of environment.lock>  (checked here: the image's name is its content)
#   --build-arg TORCH_VARIANT=cpu | cu126 | cu128 ...    (the torch build; CUDA variants for GPU runs)
#   --build-arg PYTHON_VERSION=<the lock's Python>       (the base image)
# and installs the lock with `uv pip sync --require-hashes`: exactly the lock's versions, each checked
# against its hash. A CUDA variant replaces the lock's CPU torch wheel by the CUDA build of the same torch
# version from the PyTorch wheel index (that one wheel is checked by version, not by the lock's hash).
#
# Without a lock in the context this builds the default image of tasks without their own environment,
# from requirements-bench.txt; from the repository root:
#   docker build -f docker/eval.Dockerfile -t researchcodebench-eval:py3.11-torch2.13.0-cpu .
#   docker build -f docker/eval.Dockerfile --build-arg TORCH_VARIANT=cu128 \
#       -t researchcodebench-eval:py3.11-torch2.13.0-gpu .
ARG PYTHON_VERSION=3.11
FROM python:${PYTHON_VERSION}-slim

ARG LOCK_HASH=
ARG TORCH_VARIANT=cpu
ARG UV_VERSION=0.13.9
ARG INDEX_URL=https://pypi.org/simple
ARG TORCH_INDEX=https://download.pytorch.org/whl

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_NO_CACHE=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 \
    VIRTUAL_ENV=/opt/rcb/venv \
    PATH=/opt/rcb/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

LABEL org.researchcodebench.lock-hash="${LOCK_HASH}" \
      org.researchcodebench.torch-variant="${TORCH_VARIANT}"

# The lock is optional in the context (the trailing * lets the default build work without one).
COPY requirements-bench.txt environment.lock* /opt/rcb/

# The environment lives in its own venv: `uv pip sync` removes whatever the lock does not list, which must
# not be the image's own pip and uv.
RUN set -eu; \
    case "${TORCH_VARIANT}" in cpu|cu1[0-9][0-9]|cu1[0-9][0-9][0-9]) ;; \
        *) echo "TORCH_VARIANT must be cpu or a CUDA variant such as cu128, got '${TORCH_VARIANT}'" >&2; exit 2;; \
    esac; \
    pip install "uv==${UV_VERSION}"; \
    uv venv --python /usr/local/bin/python /opt/rcb/venv; \
    if [ -f /opt/rcb/environment.lock ]; then \
        if [ -n "${LOCK_HASH}" ]; then echo "${LOCK_HASH}  /opt/rcb/environment.lock" | sha256sum -c -; fi; \
        torch_version="$(sed -n 's/^torch==\([^+ ]*\).*/\1/p' /opt/rcb/environment.lock)"; \
        if [ "${TORCH_VARIANT}" = cpu ]; then \
            cp /opt/rcb/environment.lock /opt/rcb/install.txt; \
        else \
            awk '/^torch==/ {skip=1; next} skip && /^[ \t]/ {next} {skip=0; print}' \
                /opt/rcb/environment.lock > /opt/rcb/install.txt; \
        fi; \
        uv pip sync --python /opt/rcb/venv/bin/python --require-hashes --index-url "${INDEX_URL}" \
            --extra-index-url "${TORCH_INDEX}/cpu" --index-strategy unsafe-best-match /opt/rcb/install.txt; \
        if [ "${TORCH_VARIANT}" != cpu ]; then \
            uv pip install --python /opt/rcb/venv/bin/python --index-url "${TORCH_INDEX}/${TORCH_VARIANT}" \
                --extra-index-url "${INDEX_URL}" --index-strategy unsafe-best-match \
                "torch==${torch_version}+${TORCH_VARIANT}"; \
        fi; \
    else \
        uv pip install --python /opt/rcb/venv/bin/python --index-url "${TORCH_INDEX}/${TORCH_VARIANT}" \
            --extra-index-url "${INDEX_URL}" --index-strategy unsafe-best-match torch==2.13.0; \
        uv pip install --python /opt/rcb/venv/bin/python --index-url "${INDEX_URL}" \
            -r /opt/rcb/requirements-bench.txt; \
    fi; \
    /opt/rcb/venv/bin/python -c "import torch; print('torch', torch.__version__)"

# The sandbox runs tests as this unprivileged user and bind-mounts the task folder at /task.
RUN groupadd --gid 10001 runner \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin runner \
    && mkdir -p /task \
    && chown runner:runner /task

USER 10001:10001
WORKDIR /task
CMD ["python", "paper2code_test.py"]
