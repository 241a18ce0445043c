"""Momor's settings: every value comes from the environment (see docs/operations.md,
"Environment")."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from core.redis_client import is_cluster
from momor import broker, identity_providers
from momor.env import env_bool, env_decimal, env_float, env_int, env_list, env_secret, env_str
from momor.security_headers import POLICY as CSP_DEFAULT
from momor.security_headers import proxy_ssl_header

# Django's generic classes (ModelAdmin[Provider], ModelForm[ApiKey]...) subscriptable at run
# time, as the typed admin and forms declare them.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("MOMOR_DEBUG", default=False)

SECRET_KEY = env_secret("MOMOR_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("MOMOR_SECRET_KEY is required when MOMOR_DEBUG is off")
    SECRET_KEY = "insecure-debug-only-key"  # noqa: S105 - used only with MOMOR_DEBUG=1

ENCRYPTION_KEY = env_secret("MOMOR_ENCRYPTION_KEY")

ALLOWED_HOSTS = env_list("MOMOR_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("MOMOR_CSRF_TRUSTED_ORIGINS", [])

# Daphne's app makes `manage.py runserver` serve with Daphne; it imports Twisted, which no
# other server needs (Daphne itself imports it when it serves).
RUNSERVER_APPS = ["daphne"] if sys.argv[1:2] == ["runserver"] else []

INSTALLED_APPS = [
    *RUNSERVER_APPS,
    # Django's admin, every model registered on it audited (audit/admin_site.py)
    "audit.admin_config.AuditedAdminConfig",
    # before django.contrib.auth: its changepassword and createsuperuser are audited ones
    "audit",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    # single sign-on: django-allauth's OpenID Connect provider (allauth's socialaccount needs
    # the sites framework)
    "django.contrib.sites",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "rest_framework",
    "drf_spectacular",
    "channels",
    "accounts",
    "gateway",
    "billing",
    "alerts",
    "accounts.sso",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "momor.security_headers.ContentSecurityPolicy",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "momor.nul_guard.NulGuard",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "momor.urls"
ASGI_APPLICATION = "momor.asgi.application"

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
                # the members' UI layout: organizations to switch between, the current role
                "momor.context_processors.layout",
            ],
        },
    },
]

# A connection kept open is checked before its first query of each request (and of each of
# the gateway's database jobs, core/dbthread.py): one the database dropped while it was kept
# (a restart, a failover, an idle-connection reaper) is replaced then, rather than failing
# the query it is reused for.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'momor.sqlite3'}"),
        conn_max_age=env_int("MOMOR_DB_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
}
# Bounds on every store a call depends on (docs/billing.md, "When a store is down, nothing
# hangs"): a Redis or database that does not answer within these is treated as down.
MOMOR_REDIS_TIMEOUT_SECONDS = env_float("MOMOR_REDIS_TIMEOUT_SECONDS", 2.0, above=0)
MOMOR_DB_TIMEOUT_SECONDS = env_float("MOMOR_DB_TIMEOUT_SECONDS", 5.0, above=0)
# Days of call records (generations and attempts) kept; 0 keeps them all. The ledger and the
# daily usage are never dropped.
MOMOR_RECORD_RETENTION_DAYS = env_int("MOMOR_RECORD_RETENTION_DAYS", 0, minimum=0)
# Days of the audit trail kept (at least one: the table refuses deleting a younger row).
MOMOR_AUDIT_RETENTION_DAYS = env_int("MOMOR_AUDIT_RETENTION_DAYS", 365, minimum=1)
MOMOR_BREAKER_COOLDOWN_SECONDS = env_float("MOMOR_BREAKER_COOLDOWN_SECONDS", 5.0, above=0)
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # A server that stops answering (not only one that refuses) is noticed: connecting is
    # bounded, and a query the network drops, or a connection gone silent, times out in the
    # kernel (the gateway's own lookups are also bounded by MOMOR_DB_TIMEOUT_SECONDS).
    DATABASES["default"]["OPTIONS"] = {
        "connect_timeout": max(int(MOMOR_DB_TIMEOUT_SECONDS), 1),
        "keepalives": 1,
        "keepalives_idle": 5,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": int(MOMOR_DB_TIMEOUT_SECONDS * 1000),
    }
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The embedded mode's writer and lookup threads share the file: wait for locks, and let
    # readers run beside the writer.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
_REDIS_SOCKET = {
    "socket_timeout": MOMOR_REDIS_TIMEOUT_SECONDS,
    "socket_connect_timeout": MOMOR_REDIS_TIMEOUT_SECONDS,
}
# Django's cache and the Channels layer speak to one Redis, never a cluster: with a cluster
# REDIS_URL they need a Redis of their own (docs/scaling.md, "Scaling out").
MOMOR_CACHE_REDIS_URL = env_str("MOMOR_CACHE_REDIS_URL") or (
    "" if is_cluster(REDIS_URL) else REDIS_URL
)
if is_cluster(REDIS_URL) and not MOMOR_CACHE_REDIS_URL:
    raise ImproperlyConfigured(
        "REDIS_URL names a Redis Cluster: set MOMOR_CACHE_REDIS_URL to a single Redis"
    )
if is_cluster(MOMOR_CACHE_REDIS_URL):
    raise ImproperlyConfigured("MOMOR_CACHE_REDIS_URL must name a single Redis, not a cluster")
# The channel layer's receive waits in Redis (BZPOPMIN) up to channels_redis's brpop_timeout,
# 5 s, round after round while a feed is idle: its reads are given that on top of the time-out.
CHANNEL_LAYER_BLOCK_SECONDS = 5
_CHANNEL_LAYER_SOCKET = {
    **_REDIS_SOCKET,
    "socket_timeout": MOMOR_REDIS_TIMEOUT_SECONDS + CHANNEL_LAYER_BLOCK_SECONDS,
}

if MOMOR_CACHE_REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": MOMOR_CACHE_REDIS_URL,
            "OPTIONS": dict(_REDIS_SOCKET),
        }
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": MOMOR_CACHE_REDIS_URL, **_CHANNEL_LAYER_SOCKET}]},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CELERY_BROKER_URL = env_str("MOMOR_BROKER_URL") or MOMOR_CACHE_REDIS_URL or None
if is_cluster(CELERY_BROKER_URL):
    raise ImproperlyConfigured("MOMOR_BROKER_URL must name a single Redis or RabbitMQ")
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_ACCEPT_CONTENT = ["json", "orjson"]
CELERY_BROKER_TRANSPORT_OPTIONS = broker.transport_options(
    CELERY_BROKER_URL, env_int("MOMOR_VISIBILITY_TIMEOUT_SECONDS", 300, minimum=1), _REDIS_SOCKET
)
CELERY_TASK_QUEUES = broker.task_queues(CELERY_BROKER_URL)
# A task running when the broker connection drops is cancelled, and delivered again.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True

# The record hand-off (docs/billing.md, "Recording: nothing lost, nothing doubled"): the
# journal's directory (embedded mode, and while Redis is unreachable) and how long a call waits
# on its disk, how long a record stays with a consumer that stopped answering before another
# takes it, whether gateway processes also store records from the Redis stream (deployments
# without a Celery worker), and how long SIGTERM lets calls finish.
MOMOR_JOURNAL_DIR = Path(env_str("MOMOR_JOURNAL_DIR", str(BASE_DIR / "var" / "journal")))
MOMOR_JOURNAL_TIMEOUT_SECONDS = env_float("MOMOR_JOURNAL_TIMEOUT_SECONDS", 2.0, above=0)
# In embedded mode, where the journal's records are stored into the database: by a process of
# each gateway process's own (billing/recording/storer.py), or by a thread of the gateway.
MOMOR_JOURNAL_STORER = env_str("MOMOR_JOURNAL_STORER", "process")
if MOMOR_JOURNAL_STORER not in {"process", "thread"}:
    raise ImproperlyConfigured("MOMOR_JOURNAL_STORER must be process or thread")
MOMOR_RECORDS_CLAIM_SECONDS = env_float("MOMOR_RECORDS_CLAIM_SECONDS", 60.0, above=0)
MOMOR_RECORD_IN_GATEWAY = env_bool("MOMOR_RECORD_IN_GATEWAY", default=False)
MOMOR_SHUTDOWN_GRACE_SECONDS = env_float("MOMOR_SHUTDOWN_GRACE_SECONDS", 30.0, minimum=0)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG and env_bool("MOMOR_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
# HSTS (docs/security.md, "Deployment hardening"): on with the secure cookies, a year unless told;
# Django sends it on secure requests alone.
SECURE_HSTS_SECONDS = env_int("MOMOR_HSTS_SECONDS", 31_536_000 if SESSION_COOKIE_SECURE else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("MOMOR_HSTS_INCLUDE_SUBDOMAINS", default=False)
# Behind a TLS proxy the server does not take the scheme from (no --proxy-headers): the header
# it sets and its value for HTTPS, "X-Forwarded-Proto: https"; only when the proxy sets it on
# every request, replacing whatever the client sent.
SECURE_PROXY_SSL_HEADER = proxy_ssl_header(env_str("MOMOR_PROXY_SSL_HEADER"))
# The pages' Content-Security-Policy (momor/security_headers.py); empty: none sent.
MOMOR_CONTENT_SECURITY_POLICY = env_str("MOMOR_CONTENT_SECURITY_POLICY", CSP_DEFAULT)

# The completions body limit of the spec (30 MiB); every other route has a smaller one, and
# every body a time to arrive in (gateway/edge/body_limit.py), both applied while it is read.
# Django's own check is a backstop behind them.
MOMOR_MAX_BODY_BYTES = 30 * 1024 * 1024
MOMOR_BODY_TIMEOUT = env_float("MOMOR_BODY_TIMEOUT", 60.0, above=0)
MOMOR_WEBSOCKET_MESSAGE_BYTES = 4096
DATA_UPLOAD_MAX_MEMORY_SIZE = MOMOR_MAX_BODY_BYTES + 1

MOMOR_REFRESH_SECONDS = env_float("MOMOR_REFRESH_SECONDS", 2.0, above=0)
# Serve Bearer-key completions calls on the lean ASGI route rather than Django's request
# cycle (see docs/performance.md, "Choices made by measurement").
MOMOR_LEAN_COMPLETIONS = env_bool("MOMOR_LEAN_COMPLETIONS", default=True)
MOMOR_UPSTREAM_CONNECT_TIMEOUT = env_float("MOMOR_UPSTREAM_CONNECT_TIMEOUT", 10.0, above=0)
MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT = env_float("MOMOR_UPSTREAM_FIRST_BYTE_TIMEOUT", 300.0, above=0)
MOMOR_UPSTREAM_CHUNK_TIMEOUT = env_float("MOMOR_UPSTREAM_CHUNK_TIMEOUT", 120.0, above=0)
# Providers send a stream's head at once: a streamed try with no head after this fails over.
MOMOR_UPSTREAM_STREAM_HEADERS_TIMEOUT = env_float(
    "MOMOR_UPSTREAM_STREAM_HEADERS_TIMEOUT", 30.0, above=0
)
MOMOR_UPSTREAM_TRANSPORT = env_str("MOMOR_UPSTREAM_TRANSPORT", "http1")
# Outbound requests to addresses users supply (core/outbound.py): the only token
# endpoint a Vertex service account may name, and networks the guard lets through besides public
# ones.
MOMOR_GOOGLE_TOKEN_URL = env_str("MOMOR_GOOGLE_TOKEN_URL", "https://oauth2.googleapis.com/token")
MOMOR_OUTBOUND_ALLOW = env_list("MOMOR_OUTBOUND_ALLOW", [])
if MOMOR_UPSTREAM_TRANSPORT not in {"http1", "aiohttp", "httpx"}:
    raise ImproperlyConfigured("MOMOR_UPSTREAM_TRANSPORT must be http1, aiohttp or httpx")

# Billing: the fee on calls made with an organization's own saved key, as a fraction of what
# the call would cost on Momor's key (0 = free); the default rate limit per key per minute
# (always a finite number: every answer after the key is known states it); how long a
# reservation of a call whose process died is held; the completion ceiling a reservation
# assumes when a call sets none.
MOMOR_BYOK_FEE = env_decimal("MOMOR_BYOK_FEE", "0", minimum=Decimal(0), maximum=Decimal(1))
MOMOR_RATE_LIMIT_PER_MINUTE = env_int("MOMOR_RATE_LIMIT_PER_MINUTE", 600, minimum=1)
# How long an X-Request-Id stays claimed by the call that sent it: as long as records are kept.
MOMOR_REQUEST_ID_DAYS = env_int("MOMOR_REQUEST_ID_DAYS", 400, minimum=1)
MOMOR_RESERVATION_TTL_SECONDS = env_int("MOMOR_RESERVATION_TTL_SECONDS", 900, minimum=1)
MOMOR_RESERVE_COMPLETION_TOKENS = env_int("MOMOR_RESERVE_COMPLETION_TOKENS", 4096, minimum=1)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "accounts.json_parser.OrjsonParser",  # a 400 for JSON nested too deep
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}
# The schema and its docs page are for signed-in members and management keys alone; the page's
# scripts and styles are Momor's own static files (npm's swagger-ui-dist, scripts/lib.sh).
SPECTACULAR_SETTINGS = {
    "TITLE": "Momor management API",
    "VERSION": "1",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SERVE_AUTHENTICATION": [
        "rest_framework.authentication.SessionAuthentication",
        "accounts.api_auth.ManagementKeyAuthentication",
    ],
    "SWAGGER_UI_DIST": f"/{STATIC_URL}vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": f"/{STATIC_URL}vendor/swagger-ui/favicon-32x32.png",
}

# Operations (docs/operations.md, "Metrics" and "Probes"): Prometheus metrics (off: no
# per-call figures, no /metrics), the bearer token a scrape must send, a port of their own (0:
# Momor's port), how many organizations get a label of their own (and which always do), and how
# long a readiness probe waits on a store.
MOMOR_METRICS = env_bool("MOMOR_METRICS", default=True)
MOMOR_METRICS_TOKEN = env_secret("MOMOR_METRICS_TOKEN")
# Without a token, /metrics is served on Momor's port only when opened on purpose (a port that
# is itself private); a port of their own listens on this address (loopback unless told).
MOMOR_METRICS_PUBLIC = env_bool("MOMOR_METRICS_PUBLIC", default=False)
MOMOR_METRICS_PORT = env_int("MOMOR_METRICS_PORT", 0, minimum=0, maximum=65535)
MOMOR_METRICS_ADDRESS = env_str("MOMOR_METRICS_ADDRESS", "127.0.0.1")
MOMOR_METRICS_ORGANIZATIONS = env_int("MOMOR_METRICS_ORGANIZATIONS", 20, minimum=0)
MOMOR_METRICS_ORGANIZATION_IDS = env_list("MOMOR_METRICS_ORGANIZATION_IDS", [])
MOMOR_PROBE_TIMEOUT_SECONDS = env_float("MOMOR_PROBE_TIMEOUT_SECONDS", 0.5, above=0)
# Log lines as plain text (the default) or JSON objects, one per line, with one line per call.
MOMOR_LOG_FORMAT = env_str("MOMOR_LOG_FORMAT", "plain")
if MOMOR_LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured("MOMOR_LOG_FORMAT must be plain or json")

# Every handler masks secrets (momor/logs.py): the filter is declared here for Momor's own
# handler, and `configure` adds it to handlers configured elsewhere (the ASGI server's).
LOGGING_CONFIG = "momor.logs.configure"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"scrub_secrets": {"()": "momor.logs.ScrubSecrets"}},
    "formatters": {"json": {"()": "momor.logs.JsonLines"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["scrub_secrets"],
            **({"formatter": "json"} if MOMOR_LOG_FORMAT == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": env_str("MOMOR_LOG_LEVEL", "INFO")},
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}

# Error reports (the admins' mail, the debug page) mask secrets in frames and request data.
DEFAULT_EXCEPTION_REPORTER_FILTER = "momor.logs.ScrubbingReporterFilter"

# The members' UI ----------------------------------------------------------------------
STATICFILES_DIRS = [BASE_DIR / "static"]
# Momor serves /static/ itself (a few small files; see momor/static.py) so that one process
# is a whole deployment; set it off when a reverse proxy serves `collectstatic`'s output.
MOMOR_SERVE_STATIC = env_bool("MOMOR_SERVE_STATIC", default=True)
LOGOUT_REDIRECT_URL = "/accounts/login/"
# Password reset mails go to the console unless an SMTP backend is configured.
EMAIL_BACKEND = env_str("MOMOR_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("MOMOR_FROM_EMAIL", "momor@localhost")
EMAIL_HOST = env_str("MOMOR_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("MOMOR_EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("MOMOR_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = env_secret("MOMOR_EMAIL_PASSWORD")
EMAIL_USE_TLS = env_bool("MOMOR_EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env_bool("MOMOR_EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT = 30

# Alerts (docs/alerts.md) ----------------------------------------------------------------
# Whether this process runs the alerts loop (each Celery worker; each gateway process in
# embedded mode), how often it checks every organization's rules, and how webhooks are tried.
MOMOR_ALERTS = env_bool("MOMOR_ALERTS", default=True)
MOMOR_ALERTS_INTERVAL_SECONDS = env_float("MOMOR_ALERTS_INTERVAL_SECONDS", 30.0, above=0)
MOMOR_WEBHOOK_RETRY_SECONDS = env_float("MOMOR_WEBHOOK_RETRY_SECONDS", 10.0, above=0)
MOMOR_WEBHOOK_TIMEOUT_SECONDS = env_float("MOMOR_WEBHOOK_TIMEOUT_SECONDS", 10.0, above=0)
# At least 32 days: an event must outlive its budget's window (a month at most), or it fires again.
MOMOR_ALERTS_RETENTION_DAYS = env_int("MOMOR_ALERTS_RETENTION_DAYS", 90, minimum=32)

# Roles and sign-in (see docs/security.md, "Roles") ------------------------------------
# How long an invitation's link works.
MOMOR_INVITATION_TTL_SECONDS = env_int("MOMOR_INVITATION_TTL_SECONDS", 7 * 24 * 3600)
# Sign-in throttling: after this many failed sign-ins from one client address, within a
# window, its further sign-ins (right password or not) are refused until they age out; after
# this many for one account, its sign-ins from the addresses that failed on it are. Counted in
# the cache: Redis with REDIS_URL, each process's memory otherwise.
MOMOR_SIGNIN_FAILURES = env_int("MOMOR_SIGNIN_FAILURES", 5)
MOMOR_SIGNIN_FAILURES_PER_ADDRESS = env_int("MOMOR_SIGNIN_FAILURES_PER_ADDRESS", 20)
MOMOR_SIGNIN_WINDOW_SECONDS = env_int("MOMOR_SIGNIN_WINDOW_SECONDS", 900)
for _name in [
    "MOMOR_INVITATION_TTL_SECONDS",
    "MOMOR_SIGNIN_FAILURES",
    "MOMOR_SIGNIN_FAILURES_PER_ADDRESS",
    "MOMOR_SIGNIN_WINDOW_SECONDS",
]:
    if globals()[_name] < 1:
        raise ImproperlyConfigured(f"{_name} must be at least 1")

# The resolvers an organization's domain verification asks for its TXT record (host or
# host:port, comma-separated; empty: the system's).
MOMOR_DNS_NAMESERVERS = env_list("MOMOR_DNS_NAMESERVERS", [])
# Single sign-on (docs/operations.md, "Single sign-on"): the OpenID Connect identity providers
# from MOMOR_SSO_PROVIDERS, through django-allauth; allauth signs up nobody with a password,
# asks for no e-mail confirmation of its own (the provider's email_verified claim is what
# counts) and keeps no provider's tokens.
SITE_ID = 1
SOCIALACCOUNT_PROVIDERS = {"openid_connect": {"APPS": identity_providers.from_environment()}}
SOCIALACCOUNT_ADAPTER = "accounts.sso.adapters.SocialAccountAdapter"
ACCOUNT_ADAPTER = "accounts.sso.adapters.AccountAdapter"
SOCIALACCOUNT_EMAIL_AUTHENTICATION = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = True
SOCIALACCOUNT_STORE_TOKENS = False
ACCOUNT_EMAIL_VERIFICATION = "none"
