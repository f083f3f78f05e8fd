# The evaluation environment as a container image: what a task's paper2code_test.py runs in under the
# docker sandbox (researchcodebench/sandbox/docker.py, docs/sandbox.md).
#
# Every image is built from an environment lock (docs/environments.md) by `python manage.py
# build_eval_images` (or `python -m researchcodebench images`), which writes a private build context:
#   this file, environment.lock, wheels/ (exactly the lock's wheels, fetched on the host with the host's
#   own package sources and CA settings and checked against the lock's hashes), uv (the host's uv binary)
#   and, for a CUDA variant only, ca-bundle.crt (the host's CA bundle, for the one download the build makes)
# and builds researchcodebench-eval:<lock hash[:16]>-<variant> with
#   --build-arg BASE_IMAGE=<a Python image>   (default python:3.11-slim; where no registry can be reached,
#                                              the Debian root of scripts/docker-engine.sh base-image)
#   --build-arg PYTHON=python3.11              (the base's interpreter, on its PATH)
#   --build-arg LOCK_HASH=<sha256 of environment.lock>  (checked here: the image's name is its content)
#   --build-arg TORCH_VARIANT=cpu | cu126 | cu128 ...    (the torch build; CUDA variants for GPU runs)
# A CPU image is built with no network at all: `uv pip sync --offline --no-index --require-hashes` installs
# the lock from the context's wheels, so the image holds exactly what the lock names, compiled to bytecode
# (the root is read-only at run time: without .pyc files every run would compile torch again). A CUDA variant then
# replaces the lock's CPU torch by the CUDA build of the same version from the PyTorch wheel index (the one
# step with network; that wheel is checked by version, not by the lock's hash).
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
ARG PYTHON=python3.11
ARG LOCK_HASH=
ARG TORCH_VARIANT=cpu
ARG INDEX_URL=https://pypi.org/simple
ARG TORCH_INDEX=https://download.pytorch.org/whl
ENV UV_NO_CACHE=1 UV_PYTHON_DOWNLOADS=never
COPY uv environment.lock ca-bundle.crt* /opt/rcb/build/
COPY wheels/ /opt/rcb/build/wheels/
RUN set -eu; \
    cd /opt/rcb/build; \
    case "${TORCH_VARIANT}" in cpu|cu1[0-9][0-9]|cu1[0-9][0-9][0-9]) ;; \
        *) echo "TORCH_VARIANT must be cpu or a CUDA variant such as cu128, got '${TORCH_VARIANT}'" >&2; exit 2;; \
    esac; \
    test -n "${LOCK_HASH}" || { echo "LOCK_HASH is required (the sha256 of environment.lock)" >&2; exit 2; }; \
    echo "${LOCK_HASH}  environment.lock" | sha256sum -c -; \
    interpreter="$(command -v "${PYTHON}")" || { echo "no ${PYTHON} in the base image" >&2; exit 2; }; \
    ./uv venv --quiet --python "${interpreter}" /opt/rcb/venv; \
    if [ "${TORCH_VARIANT}" = cpu ]; then \
        cp environment.lock install.txt; \
    else \
        awk '/^torch==/ {skip=1; next} skip && /^[ \t]/ {next} {skip=0; print}' environment.lock > install.txt; \
    fi; \
    ./uv pip sync --python /opt/rcb/venv/bin/python --require-hashes --offline --no-index \
        --compile-bytecode --find-links wheels install.txt; \
    if [ "${TORCH_VARIANT}" != cpu ]; then \
        torch_version="$(sed -n 's/^torch==\([^+ ]*\).*/\1/p' environment.lock)"; \
        if [ -f ca-bundle.crt ]; then export SSL_CERT_FILE=/opt/rcb/build/ca-bundle.crt; fi; \
        ./uv pip install --python /opt/rcb/venv/bin/python --index-url "${TORCH_INDEX}/${TORCH_VARIANT}" \
            --extra-index-url "${INDEX_URL}" --index-strategy unsafe-best-match \
            "torch==${torch_version}+${TORCH_VARIANT}"; \
    fi; \
    /opt/rcb/venv/bin/python -c "import sys; print('python', sys.version.split()[0])"

FROM ${BASE_IMAGE}
ARG LOCK_HASH=
ARG TORCH_VARIANT=cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 \
    VIRTUAL_ENV=/opt/rcb/venv \
    PATH=/opt/rcb/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL org.researchcodebench.lock-hash="${LOCK_HASH}" \
      org.researchcodebench.torch-variant="${TORCH_VARIANT}"

# Only the environment itself: no uv, no wheels, no CA bundle of the build host.
COPY --from=build /opt/rcb/venv /opt/rcb/venv
COPY environment.lock /opt/rcb/environment.lock

# The sandbox runs tests as this unprivileged user in a private /task tmpfs (the task folder is copied in).
RUN groupadd --gid 10001 runner \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin runner \
    && mkdir -p /task \
    && chown runner:runner /task

USER 10001:10001
WORKDIR /task
CMD ["python", "-c", "import sys; print(sys.version)"]
