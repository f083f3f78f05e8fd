# The evaluation environment as a container image: what a task's paper2code_test.py runs in under the
# docker sandbox (researchcodebench/sandbox/docker.py). Build from the repository root:
#   docker build -f docker/eval.Dockerfile -t researchcodebench-eval:py3.11-torch2.13.0-cpu .
# The CPU build of torch is pinned on purpose: an unpinned torch from PyPI pulls a multi-GB CUDA build.
# For a GPU image, pass a CUDA wheel index, e.g.
#   --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 -t researchcodebench-eval:...-gpu
FROM python:3.11-slim

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1

COPY requirements-bench.txt /opt/rcb/requirements-bench.txt

# torch first, from the wheel index chosen above (its local version, e.g. 2.13.0+cpu, satisfies the pin in
# requirements-bench.txt), then the rest of the pinned environment from PyPI.
RUN pip install --index-url "${TORCH_INDEX_URL}" torch==2.13.0 \
    && pip install -r /opt/rcb/requirements-bench.txt \
    && python -c "import torch, numpy, scipy; print('torch', torch.__version__)"

# The sandbox runs tests as this unprivileged user and bind-mounts the task folder at /task.
RUN groupadd --gid 10001 runner \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin runner \
    && mkdir -p /task \
    && chown runner:runner /task

USER 10001:10001
WORKDIR /task
CMD ["python", "paper2code_test.py"]
