"""The one settings module: every deployment difference comes from the environment.

With no environment at all (``make demo``) the portal runs on SQLite under ``var/`` with a Celery broker that
needs no server (kombu's filesystem transport under ``var/broker/``). Production sets ``DATABASE_URL``
(PostgreSQL via psycopg 3) and ``CELERY_BROKER_URL`` (RabbitMQ or Redis). See the README for every variable.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from config.checks import GENERATE_KEY_HINT, secret_key_weakness
from config.env import env_bool, env_float, env_int, env_list, env_secret, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("RCB_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. Set DJANGO_SECRET_KEY to a long random string "
            "(or DJANGO_DEBUG=1 for local development only)."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-DJANGO_DEBUG"
elif not DEBUG and (weakness := secret_key_weakness(SECRET_KEY)):
    raise ImproperlyConfigured(f"DJANGO_SECRET_KEY is {weakness}; {GENERATE_KEY_HINT}.")

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "allauth",
    "allauth.account",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "contributions",
    "evaluation",
    "leaderboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "config.middleware.BodySizeLimitMiddleware",
    "config.middleware.ApiNulCharacterMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Innermost: the 405 page it renders still passes the CSP and the other middleware on its way out.
    "config.middleware.MethodNotAllowedPageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.context_processors.site",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web process and worker share the file: wait for locks instead of failing with "database is locked".
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not memory, so that worker subprocesses started by tests see the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}
    # SQLite creates the file but not its folder: a fresh RCB_VAR_DIR must work on the first command.
    if DATABASES["default"]["NAME"] not in ("", ":memory:"):
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The planner's price of a random page read. PostgreSQL's default, 4, prices a spinning disk: with it a
    # run's verdicts (an index lookup per completion) were read by scanning every verdict of the benchmark
    # (a run page of 6,000 completions: 878 -> 241 ms of database time at 600,000 verdicts). 1.1 is the
    # usual value for SSDs and for a database that fits in memory; 0 leaves the server's own setting.
    random_page_cost = env_float("RCB_DB_RANDOM_PAGE_COST", 1.1, minimum=0)
    if random_page_cost:
        options = DATABASES["default"].setdefault("OPTIONS", {})
        options["options"] = f"{options.get('options', '')} -c random_page_cost={random_page_cost}".strip()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The cache holds rendered leaderboard pages and API tables, keyed by the versions of the scopes they show
# (leaderboard/caching.py, leaderboard/scopes.py).
# Embedded default: per-process memory. RCB_CACHE_URL=redis://host:6379/1 shares one cache between the web
# workers (needs the redis package, pinned in requirements.txt).
CACHE_URL = env_str("RCB_CACHE_URL", "")
if CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "rcb",
        }
    }
elif CACHE_URL:
    raise ImproperlyConfigured(
        f"RCB_CACHE_URL={CACHE_URL!r}: only redis:// (or rediss://, unix://) is supported."
    )
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "OPTIONS": {"MAX_ENTRIES": env_int("RCB_CACHE_MAX_ENTRIES", 500, minimum=10)},
        }
    }
# With a shared store, each web process also keeps the leaderboard's bodies it served last in memory, up to this
# many MB (leaderboard/caching.py); the embedded default store is already this process's memory (0: off).
RCB_PAGE_MEMORY_MB = env_int("RCB_PAGE_MEMORY_MB", 64 if CACHE_URL else 0, minimum=0)
# A run's page and the runs API, for visitors who are not signed in: one copy shared by the web processes, served
# as it is for RCB_LIVE_FRESH_S seconds, then up to RCB_LIVE_STALE_S more while one process builds the next
# after its response (evaluation/live_cache.py). 0 fresh seconds: no copies, each request builds its answer.
RCB_LIVE_FRESH_S = env_float("RCB_LIVE_FRESH_S", 2.0, minimum=0)
RCB_LIVE_STALE_S = env_float("RCB_LIVE_STALE_S", 4.0, minimum=0)
# The board's pages and tables while their scopes move (a release under evaluation): a visitor who is not signed
# in gets the previous body while one process builds the new one after its response, for at most this many
# seconds after that build started (leaderboard/caching.py). 0: every miss builds its answer.
RCB_BOARD_STALE_S = env_float("RCB_BOARD_STALE_S", 1.0, minimum=0)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Accounts (django-allauth) ------------------------------------------------------------------------------
# Sign-in is by email address, verified before the first sign-in; the user name is derived from it. Profiles
# and API tokens live in ``contributions`` (contributions/views/accounts.py). The admin's own login form is
# replaced by this one (config/urls.py), so every sign-in goes through the same rate limits.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "contributions:profile"
ACCOUNT_LOGOUT_REDIRECT_URL = "leaderboard:board"
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_ADAPTER = "contributions.account_adapter.AccountAdapter"
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
# Confirmation links are signed (HMAC) and a GET only shows the confirm button: mail scanners that follow
# links do not confirm addresses on the user's behalf.
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
# Sign-in, sign-up and reset forms say the same whether or not an address has an account.
ACCOUNT_PREVENT_ENUMERATION = True
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[ResearchCodeBench Hub] "
# Brute-force protection: allauth counts in the cache (CACHES above; per process unless RCB_CACHE_URL shares
# it). ``login_failed`` limits failed sign-ins per IP and per account (key: the address); once it is spent
# even the right password is refused until the period ends. ``signup`` throttles account creation per IP.
_RATES = re.compile(r"\d+/\d*[smhd](/(ip|key|user))?(,\d+/\d*[smhd](/(ip|key|user))?)*")


def _rates(name: str, value: str) -> str:
    """``value``, the allauth rate list ("10/m/ip,5/15m/key") read from ``name``, checked here so that a typo
    stops start-up naming the variable instead of failing the first sign-in."""
    value = value.replace(" ", "")
    if not _RATES.fullmatch(value):
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a rate list like '10/m/ip,5/15m/key' (amount/period[/ip|key|user])."
        )
    return value


ACCOUNT_RATE_LIMITS = {
    "login_failed": _rates("RCB_LOGIN_FAILED_LIMIT", env_str("RCB_LOGIN_FAILED_LIMIT", "10/m/ip,5/15m/key")),
    "login": _rates("RCB_LOGIN_LIMIT", env_str("RCB_LOGIN_LIMIT", "30/m/ip")),
    "signup": _rates("RCB_SIGNUP_LIMIT", env_str("RCB_SIGNUP_LIMIT", "5/h/ip")),
    "reset_password": "20/m/ip,5/m/key",
}
# Rate limits count per client IP: behind N reverse proxies the client is the Nth address from the right of
# X-Forwarded-For (0: the connection's address, the only safe value without a proxy).
ALLAUTH_TRUSTED_PROXY_COUNT = env_int("RCB_TRUSTED_PROXY_COUNT", 0, minimum=0)

# Email (Django's MAILERS): printed on the console in development and the demo, as readable text
# (config/mail.py: no quoted-printable, so a confirmation link can be copied); with debug off, sent over
# SMTP as the EMAIL_* variables say.
if DEBUG:
    MAILERS = {"default": {"BACKEND": "config.mail.ReadableConsoleBackend"}}
else:
    MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": env_str("EMAIL_HOST", "localhost"),
                "port": env_int("EMAIL_PORT", 587, minimum=1),
                "username": env_str("EMAIL_HOST_USER", ""),
                "password": env_str("EMAIL_HOST_PASSWORD", ""),
                "use_tls": env_bool("EMAIL_USE_TLS", default=True),
                "timeout": 30,
            },
        }
    }
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "ResearchCodeBench Hub <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# Production serves collected, hashed, compressed files (collectstatic runs in the image build); without the
# manifest (development, tests) files are served straight from static/.
STATIC_MANIFEST = env_bool("DJANGO_STATIC_MANIFEST", default=not DEBUG)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if STATIC_MANIFEST
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = not STATIC_MANIFEST
# Without the manifest, files are looked up when asked for (an edit shows at once) rather than listed when the
# middleware starts: listing them all took about 50 ms each time a handler was built (every test client).
WHITENOISE_AUTOREFRESH = not STATIC_MANIFEST
MEDIA_ROOT = VAR_DIR / "media"

# --- Transport security ----------------------------------------------------------------------------------------
# With debug off, session and CSRF cookies are HTTPS-only. A deployment serving HTTPS turns on the redirect of
# plain HTTP and HSTS (they are off by default: TLS usually ends at a reverse proxy, which may redirect itself,
# and HSTS cannot be taken back from browsers that saw it). Behind such a proxy Django learns that a request
# came over HTTPS from the header the proxy sets, DJANGO_SECURE_PROXY_SSL_HEADER ("none": no proxy); trust it
# only behind a proxy that overwrites it, or any client could claim HTTPS.
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", default=False)
# The health check answers the orchestrator's plain-HTTP probe instead of redirecting it.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
_PROXY_SSL_HEADER = env_str("DJANGO_SECURE_PROXY_SSL_HEADER", "none" if DEBUG else "X-Forwarded-Proto")
if _PROXY_SSL_HEADER.lower() != "none":
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", _PROXY_SSL_HEADER):
        raise ImproperlyConfigured(
            f"DJANGO_SECURE_PROXY_SSL_HEADER={_PROXY_SSL_HEADER!r} is not a header name like X-Forwarded-Proto "
            "(or none)."
        )
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https")
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp): scripts only from our own static files (no inline script, no eval:
# static/js/charts.js draws Vega with its expression interpreter); <style> elements only with the request's
# nonce (the snippet page's Pygments stylesheet), while style attributes stay allowed (the progress and
# solve-rate bars set a width: CSS in an attribute cannot run script, and templates escape what goes in).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-elem": [SELF, NONCE],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    }
}

REST_FRAMEWORK = {
    # Public reads list no security scheme, so Swagger UI marks only what needs a token (config/api_schema.py).
    "DEFAULT_SCHEMA_CLASS": "config.api_schema.PublicAwareAutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "contributions.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_RENDERER_CLASSES": [
        "evaluation.exports.FastJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "config.api_pagination.BoundedLimitOffsetPagination",
    # ``?format=`` (empty) is a 404 like any format an operation does not answer in (config/api_negotiation.py).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api_negotiation.StrictFormatNegotiation",
    "PAGE_SIZE": 100,
    "DEFAULT_THROTTLE_RATES": {"uploads": env_str("RCB_UPLOAD_THROTTLE", "30/hour")},
}
#: the largest predictions file an upload (web form or API) accepts, in bytes
RCB_UPLOAD_MAX_BYTES = env_int("RCB_UPLOAD_MAX_BYTES", 20 * 1024 * 1024, minimum=1)
#: seconds an upload answered 202 (Prefer: respond-async) waits for a worker before the reaper sends it again
RCB_UPLOAD_RESEND_S = env_int("RCB_UPLOAD_RESEND_S", 120, minimum=1)
#: checks of such an upload a worker may begin; one more and it fails, telling its submitter (a check the portal
#: itself keeps failing on, a bug or a fault, is not sent again for ever)
RCB_UPLOAD_MAX_CHECKS = env_int("RCB_UPLOAD_MAX_CHECKS", 3, minimum=1)
#: the largest ``code`` or ``response`` of one predictions line, in UTF-8 bytes
RCB_UPLOAD_MAX_CODE_BYTES = env_int("RCB_UPLOAD_MAX_CODE_BYTES", 256 * 1024, minimum=1)
#: the most (non-blank) lines a predictions file may have
RCB_UPLOAD_MAX_LINES = env_int("RCB_UPLOAD_MAX_LINES", 100_000, minimum=1)
#: completions per snippet an upload may give (``completion_idx`` from 0 to this minus one)
RCB_UPLOAD_MAX_COMPLETIONS = env_int("RCB_UPLOAD_MAX_COMPLETIONS", 100, minimum=1)
# Uploads larger than FILE_UPLOAD_MAX_MEMORY_SIZE are spooled to a file here while the request is read. A web
# process killed mid-request leaves its file behind: the beat removes files older than RCB_UPLOAD_TMP_MAX_AGE_S.
FILE_UPLOAD_TEMP_DIR = str(VAR_DIR / "upload-tmp")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
RCB_UPLOAD_TMP_MAX_AGE_S = env_int("RCB_UPLOAD_TMP_MAX_AGE_S", 3600, minimum=60)
# Safe intake of contributed code (contributions/intake.py): archives (zip, tar, tar.gz) and git fetches are
# refused past these limits, naming the limit; git fetches only https:// URLs, and file:// ones when allowed
# (an operator's local mirrors and the tests: on a public portal it would read the server's own disk).
RCB_INTAKE_MAX_BYTES = env_int("RCB_INTAKE_MAX_BYTES", 50 * 1024 * 1024, minimum=1)
# Request bodies (config/middleware.py): signed-in requests may carry the largest upload or archive and the
# form around it; anonymous ones only what the sign-in and sign-up forms need.
RCB_REQUEST_MAX_BYTES = env_int(
    "RCB_REQUEST_MAX_BYTES", max(RCB_UPLOAD_MAX_BYTES, RCB_INTAKE_MAX_BYTES) + 1024 * 1024, minimum=1
)
RCB_ANONYMOUS_REQUEST_MAX_BYTES = env_int("RCB_ANONYMOUS_REQUEST_MAX_BYTES", 64 * 1024, minimum=1)
RCB_INTAKE_MAX_FILES = env_int("RCB_INTAKE_MAX_FILES", 2000, minimum=1)
RCB_INTAKE_MAX_MEMBER_BYTES = env_int("RCB_INTAKE_MAX_MEMBER_BYTES", 10 * 1024 * 1024, minimum=1)
RCB_INTAKE_MAX_RATIO = env_float("RCB_INTAKE_MAX_RATIO", 100.0, minimum=1)
RCB_INTAKE_GIT_TIMEOUT_S = env_float("RCB_INTAKE_GIT_TIMEOUT_S", 120.0, minimum=1)
RCB_INTAKE_ALLOW_FILE_URLS = env_bool("RCB_INTAKE_ALLOW_FILE_URLS", default=False)
SPECTACULAR_SETTINGS = {
    "TITLE": "ResearchCodeBench Hub API",
    "DESCRIPTION": "Read the leaderboard, models, papers, snippets, runs and results; submit predictions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and ReDoc assets are served from the installed sidecar package: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Request bodies get components of their own, so an upload's ``file`` is binary (a file part), not a URL.
    "COMPONENT_SPLIT_REQUEST": True,
    # ``<id:...>`` (contributions/url_converters.py): a row id, 0 to PostgreSQL's largest bigint
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}},
}

# --- Celery ------------------------------------------------------------------------------------------------
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    # One folder for both directions, so that web and worker processes on one machine see each other's
    # messages (kombu's filesystem transport reads data_folder_in and writes data_folder_out).
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        # kombu polls the folder; its 1 s default idles a worker about a second after every task.
        "polling_interval": 0.05,
    }
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_WORKER_HEARTBEAT_S = env_int("RCB_WORKER_HEARTBEAT_S", 10, minimum=1)
# A warm shutdown waits this long for running tasks, then cancels them (evaluation/worker_signals.py).
RCB_WORKER_STOP_S = env_float("RCB_WORKER_STOP_S", 8.0, minimum=0)
#: seconds /status/ reuses its report (queue depths, counts): a page polled under load costs no broker call
#: and no query in between (0: every request asks again)
RCB_STATUS_CACHE_S = env_int("RCB_STATUS_CACHE_S", 5, minimum=0)
# Periodic work (one beat per deployment: ``celery worker -B`` in the demo, worker-site in compose): the lease
# reaper, and a safety net that re-aggregates any run whose results changed without a signal.
CELERY_BEAT_SCHEDULE = {
    "leases-reap": {
        "task": "evaluation.tasks.leases_reap",
        "schedule": env_float("RCB_REAPER_INTERVAL_S", 30.0, minimum=1),
    },
    "refresh-stale-leaderboard": {
        "task": "leaderboard.tasks.leaderboard_sweep",
        "schedule": env_float("RCB_REFRESH_STALE_INTERVAL_S", 300.0, minimum=1),
    },
    "upload-temp-sweep": {
        "task": "evaluation.tasks.upload_temp_sweep",
        "schedule": 600.0,
    },
    "validations-watchdog": {
        "task": "evaluation.tasks.validations_watchdog",
        "schedule": env_float("RCB_VALIDATION_WATCHDOG_INTERVAL_S", 60.0, minimum=1),
    },
}

RCB_EVAL_PYTHON = env_str("RCB_EVAL_PYTHON")
RCB_SANDBOX = env_str("RCB_SANDBOX", "local")
#: the docker sandbox's evaluation image (None: the core's ``DEFAULT_IMAGE``)
RCB_DOCKER_IMAGE = env_str("RCB_DOCKER_IMAGE")
#: the image evaluation images are built on (build_eval_images; default python:<lock's Python>-slim) and its
#: interpreter (default python<lock's Python>)
RCB_BASE_IMAGE = env_str("RCB_BASE_IMAGE")
RCB_BASE_PYTHON = env_str("RCB_BASE_PYTHON")
#: a worker without a GPU still consumes ``eval-gpu`` (development and test machines only; docs/sandbox.md)
RCB_GPU_QUEUE_WITHOUT_GPU = env_bool("RCB_GPU_QUEUE_WITHOUT_GPU", default=False)
#: per-run sandbox resources (``researchcodebench.sandbox.base.Limits``): the size of a run's private task
#: folder (writes past it fail with ENOSPC, never on the host's disk) and its CPU quota in cores
RCB_TASK_DIR_MB = env_int("RCB_TASK_DIR_MB", 1024, minimum=1)
RCB_CPU_QUOTA = env_float("RCB_CPU_QUOTA", 1.0, minimum=0.01)
#: per-task environments (docs/environments.md): where workers build them (uv cache inside), the package
#: sources uv resolves and installs from (it does not read pip.conf; the index URL replaces PyPI when set),
#: pruning by age and disk budget, and the memory the warm interpreters of all environments may hold together
RCB_ENV_DIR = Path(env_str("RCB_ENV_DIR", str(VAR_DIR / "envs")))
RCB_ENV_INDEX_URL = env_str("RCB_ENV_INDEX_URL")
RCB_ENV_EXTRA_INDEX_URLS = env_list("RCB_ENV_EXTRA_INDEX_URLS", [])
RCB_ENV_FIND_LINKS = env_list("RCB_ENV_FIND_LINKS", [])
RCB_ENV_MAX_AGE_DAYS = env_float("RCB_ENV_MAX_AGE_DAYS", 30.0, minimum=0)
RCB_ENV_MAX_GB = env_float("RCB_ENV_MAX_GB", 20.0, minimum=0)
RCB_WARM_MEMORY_MB = env_int("RCB_WARM_MEMORY_MB", 4096, minimum=1)
#: the development-only ``none`` sandbox runs untrusted code on the host, so it is refused unless this is on
RCB_ALLOW_UNSANDBOXED = env_bool("RCB_ALLOW_UNSANDBOXED", default=False)
#: routes bench/leaderboard_load.py's do-nothing baseline view (``/api/v1/bench/trivial/``)
RCB_BENCH = env_bool("RCB_BENCH", default=False)
RCB_BENCHMARK_REPO = Path(env_str("RCB_BENCHMARK_REPO", str(VAR_DIR / "benchmark.git")))
# Evaluation engine: how long a worker's lease on a completion lasts without a heartbeat (the reaper,
# run by beat every RCB_REAPER_INTERVAL_S (CELERY_BEAT_SCHEDULE above), re-queues an item whose lease expired),
# whether verdicts are cached on disk, and how long an item may wait in a queue before the reaper
# sends its message again.
RCB_LEASE_SECONDS = env_int("RCB_LEASE_SECONDS", 120, minimum=1)
RCB_VERDICT_CACHE = env_bool("RCB_VERDICT_CACHE", default=True)
#: where workers keep the impossible variants they derive (``researchcodebench.variants.VariantStore``: by task
#: content hash and environment), beside the verdict cache; versions that store their own are seeded instead
RCB_VARIANTS_DIR = Path(env_str("RCB_VARIANTS_DIR", str(VAR_DIR / "cache")))
RCB_PENDING_RESEND_S = env_int("RCB_PENDING_RESEND_S", 900, minimum=1)
# LLM calls: requests per completion (first try + retries), first backoff step, per-request timeout.
RCB_LLM_MAX_REQUESTS = env_int("RCB_LLM_MAX_REQUESTS", 5, minimum=1)
RCB_LLM_BACKOFF_BASE_MS = env_int("RCB_LLM_BACKOFF_BASE_MS", 1000, minimum=0)
RCB_LLM_TIMEOUT_S = env_int("RCB_LLM_TIMEOUT_S", 300, minimum=1)
# LLM egress (evaluation/llm.py): the environment variables a model may name as its API key (globs), and the
# hosts its endpoint may be on (``host``, ``host:port``, ``.domain`` for it and its subdomains, or ``*``).
# The default hosts are the public providers' (evaluation.llm.PROVIDER_BASE_URLS, a test keeps them equal);
# local vLLM/Ollama servers (127.0.0.1) must be added on purpose, as they share the host with the portal.
RCB_LLM_KEY_ENV_PATTERN = env_list("RCB_LLM_KEY_ENV_PATTERN", ["RCB_LLM_KEY_*"])
#: how evaluation/llm.py reads the key variable a model names, at call time (the portal reads the environment
#: only through config/env.py, and no app imports config)
RCB_LLM_KEY_READER = env_secret
RCB_LLM_ALLOWED_HOSTS = env_list(
    "RCB_LLM_ALLOWED_HOSTS",
    [
        "api.openai.com",
        "openrouter.ai",
        "api.deepseek.com",
        "api.x.ai",
        "generativelanguage.googleapis.com",
        "api.anthropic.com",
    ],
)

# Contributions (contributions/services/review.py, proposal_validation.py): approvals a proposal needs; a validation's time limit
# (the watchdog fails one still running after twice this, beat every RCB_VALIDATION_WATCHDOG_INTERVAL_S);
# how many times a validation that could not run is retried; the portal's address for links in emails.
RCB_APPROVALS_REQUIRED = env_int("RCB_APPROVALS_REQUIRED", 1, minimum=1)
RCB_VALIDATION_LIMIT_S = env_int("RCB_VALIDATION_LIMIT_S", 600, minimum=1)
RCB_VALIDATION_ATTEMPTS = env_int("RCB_VALIDATION_ATTEMPTS", 3, minimum=1)
#: the portal's public address (scheme, host, optional port and path prefix): links in emails are absolute,
#: this before the page's path; the default is the address ``make demo`` serves
RCB_SITE_URL = env_str("RCB_SITE_URL", "http://127.0.0.1:8000").rstrip("/")
_site = urlsplit(RCB_SITE_URL)
if _site.scheme not in ("http", "https") or not _site.netloc or _site.query or _site.fragment:
    raise ImproperlyConfigured(
        f"RCB_SITE_URL={RCB_SITE_URL!r} is not the portal's address: give http(s)://host[:port][/prefix], "
        "e.g. https://rcb.example.org"
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
}
