# The portal image: web (gunicorn + whitenoise) and Celery workers. Build: docker build -t researchcodebench-hub .
#
# BASE_IMAGE is any image with Python >= 3.12 (the public python:3.12-slim by default). Where no registry can
# be reached, `scripts/docker-engine.sh base-image portal` makes one from Debian's packages (trixie's
# python3.13 with git and bubblewrap already in it) and `scripts/docker-engine.sh portal-image` builds this
# file on it. A CA bundle at docker/ca-bundle.crt (git-ignored; that script copies the host's) is trusted for
# the package downloads, for networks that reach the index through a TLS proxy.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}
ARG PYTHON=python3
ARG INDEX_URL=https://pypi.org/simple

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    RCB_VAR_DIR=/var/lib/rcb \
    VIRTUAL_ENV=/opt/portal \
    PATH=/opt/portal/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# git: the published benchmark repository (gitpython); bubblewrap: the local sandbox backend. Installed from
# Debian's packages only when the base lacks them.
RUN if ! command -v git >/dev/null || ! command -v bwrap >/dev/null; then \
        apt-get update \
        && apt-get install -y --no-install-recommends git bubblewrap \
        && rm -rf /var/lib/apt/lists/*; \
    fi

WORKDIR /app
# requirements.txt comes along so that the pattern has a match when there is no CA bundle.
COPY requirements.txt docker/ca-bundle.cr[t] /etc/rcb-build/
RUN set -eu; \
    if [ -f /etc/rcb-build/ca-bundle.crt ]; then export PIP_CERT=/etc/rcb-build/ca-bundle.crt; fi; \
    "${PYTHON}" -m venv /opt/portal; \
    /opt/portal/bin/pip install --index-url "${INDEX_URL}" -r /etc/rcb-build/requirements.txt; \
    rm -rf /etc/rcb-build

RUN groupadd --gid 10000 app \
    && useradd --uid 10000 --gid 10000 --home-dir /app --shell /usr/sbin/nologin app \
    && mkdir -p /var/lib/rcb \
    && chown app:app /var/lib/rcb

COPY --chown=app:app . /app
# Collect, hash and compress static files at build time (a throwaway random key: settings refuse to load
# without a strong one).
RUN DJANGO_SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    python manage.py collectstatic --noinput

# Web and every worker run as `app`. The local sandbox works unprivileged (bubblewrap with user namespaces)
# where the container may create user namespaces; Docker's default seccomp profile forbids that, which is
# why compose's evaluation workers use the docker sandbox (each test in its own container) instead.
USER app
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--worker-class", "gthread", "--threads", "8", "--access-logfile", "-"]
