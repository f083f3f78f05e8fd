# The portal image: web (gunicorn + whitenoise) and Celery workers. Build: docker build -t researchcodebench-hub .
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    RCB_VAR_DIR=/var/lib/rcb

# git: the published benchmark repository (gitpython); bubblewrap: the local sandbox backend.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt /app/requirements.txt
RUN pip install -r /app/requirements.txt

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
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
