"""Settings come from the environment; with nothing set, the embedded default runs on a bare machine:
SQLite in ./data and a Celery broker on the filesystem (no server needed)."""

import os
import secrets
import time
from pathlib import Path

import dj_database_url
from kombu import Exchange, Queue
from csp.constants import NONE, SELF

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("MEMORYADMIN_DATA_DIR", BASE_DIR / "data"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def local_secret_key(folder: Path) -> str:
    """A random key made on first start and kept in the data folder (readable by its owner only), for
    an install that sets no SECRET_KEY. Of processes starting together, the first to create the file
    wins and the others read it, so they all sign with one key. (The one folder importing the settings may
    make: the key is needed now; every other folder is made when the project starts, data_folders.py.)"""
    path = folder / "secret_key"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):
            if key := path.read_text().strip():
                return key
            time.sleep(0.02)
        raise RuntimeError(f"{path} is empty: delete it, or set SECRET_KEY") from None
    key = secrets.token_urlsafe(50)
    with os.fdopen(fd, "w") as out:
        out.write(key)
    return key


# Django's debug pages only when asked for: every other install shows the custom 403/404/500 pages.
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
SECRET_KEY_FROM_FILE = not SECRET_KEY
if SECRET_KEY_FROM_FILE:
    SECRET_KEY = local_secret_key(DATA_DIR)
elif not DEBUG and (len(SECRET_KEY) < 50 or "insecure" in SECRET_KEY or "change-me" in SECRET_KEY):
    # A shipped placeholder or a short key signs sessions anyone could forge: refuse to start.
    raise RuntimeError(
        "SECRET_KEY must be a random value of 50 or more characters "
        "(python -c 'import secrets; print(secrets.token_urlsafe(50))')"
    )
# Earlier keys, still accepted after a rotation (comma-separated): sessions signed with them stay valid and the
# tombstones hashed with them keep matching (README "Forgetting").
SECRET_KEY_FALLBACKS = [k.strip() for k in os.environ.get("SECRET_KEY_FALLBACKS", "").split(",") if k.strip()]
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]
PORT = int(os.environ.get("PORT", "8000"))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "axes",
    "csp",
    "memoryadmin.apps.ProjectConfig",
    "curation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "curation.infra.middleware.UnstorableInputMiddleware",
    # The CSRF middleware stays Django's own (`check --deploy` checks its settings only when it finds it by
    # name; the session's settings are checked for the installed app); the session, the signed-in user and
    # messages are skipped for agent API calls (bearer token, JSON)
    "curation.infra.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "curation.infra.middleware.AuthenticationMiddleware",
    "curation.infra.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "curation.infra.middleware.RequestIdMiddleware",
    "curation.infra.middleware.CSPMiddleware",  # django-csp's, its policy built once
    "axes.middleware.AxesMiddleware",  # last: it turns a lockout into the lockout page
]

ROOT_URLCONF = "memoryadmin.urls"
WSGI_APPLICATION = "memoryadmin.wsgi.application"
ASGI_APPLICATION = "memoryadmin.asgi.application"

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
                "curation.rules.permissions.abilities",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{DATA_DIR / 'memoryadmin.sqlite3'}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Short OLTP queries: compiling one with JIT costs more than running it (the planner's estimate of a
    # batched lookup is high enough to trigger it, and the compile took 8 ms of a 10 ms query).
    # Added to any options the DATABASE_URL gives (?options=-c%20statement_timeout%3D5000).
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = f"{_options.get('options', '')} -c jit=off".strip()
# A read replica for agents' retrieval (curation/infra/db_router.py): the reads inside retrieval_reads() go there.
# Its tests mirror the primary's test database.
if os.environ.get("DATABASE_REPLICA_URL"):
    _replica = dj_database_url.parse(
        os.environ["DATABASE_REPLICA_URL"], conn_max_age=DATABASES["default"]["CONN_MAX_AGE"]
    )
    DATABASES["replica"] = {**DATABASES["default"], **_replica, "TEST": {"MIRROR": "default"}}
RETRIEVAL_ON_REPLICA = "replica" in DATABASES
DATABASE_ROUTERS = ["curation.infra.db_router.ReplicaRouter"]
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server and the worker read while one of them writes. Writers take turns: a
    # transaction takes the write lock when it begins (IMMEDIATE), and one that finds it taken waits up to
    # `timeout` seconds for it. A deferred transaction would read first and then fail at once with
    # "database is locked" when it came to write after another writer (SQLite does not wait for a lock
    # it cannot get without a deadlock), so the loser of a race would answer 500 instead of being told.
    DATABASES["default"]["OPTIONS"] = {
        # A throw-away database (manage.py replay's) may skip the disk flush of each commit: losing it to a
        # power cut loses nothing anyone keeps.
        "init_command": "PRAGMA journal_mode=WAL;"
        + ("PRAGMA synchronous=OFF;" if os.environ.get("MEMORYADMIN_THROWAWAY_DATABASE") == "1" else ""),
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # The queue index INCLUDEs columns so PostgreSQL counts from the index alone; SQLite has no covering
    # indexes and uses the key columns, which is all it needs: its warning says nothing to act on.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
    # The tests' database is a file too, so that their threads meet the same locking as the web server
    # and the worker do (an in-memory database shared between threads locks by table instead).
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-memoryadmin.sqlite3")}

# PostgreSQL in production: `migrate` runs as the tables' owner and, when this names the role the web
# server and workers connect as, grants that role only what it needs (curation/infra/db_roles.py).
APP_DB_ROLE = os.environ.get("MEMORYADMIN_APP_DB_ROLE", "")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out user or address before checking
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling: after AXES_FAILURE_LIMIT failed sign-ins for one user name, or from one address, that
# name or address is locked out for AXES_COOLOFF_TIME hours; a success resets the count.
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = float(os.environ.get("LOGIN_LOCKOUT_HOURS", "0.25"))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_CLIENT_IP_CALLABLE = "curation.infra.client_address.client_address"
# A secret typed into the name field is redacted before axes records the attempt (curation/infra/login_attempts.py).
AXES_USERNAME_CALLABLE = "curation.infra.login_attempts.attempted_username"
AXES_VERBOSE = False
# Proxies in front of the web server that append to X-Forwarded-For (docker-compose.yml: its TLS proxy).
TRUSTED_PROXIES = int(os.environ.get("TRUSTED_PROXIES", "0"))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "curation:candidates"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
WHITENOISE_USE_FINDERS = True  # static files straight from the project, collected or not (DEBUG is off)

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"

# Content-Security-Policy on every page: scripts and styles only from this site's static files (no inline
# script, style attribute or eval), nothing framed, forms posted only here.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# HTTPS. Off for the embedded default (plain http on localhost); docker-compose.yml turns each on, behind
# its TLS proxy. Behind a proxy, HTTPS_PROXY_HEADER trusts its X-Forwarded-Proto: set it only when the
# proxy is the sole way in.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz/$"]  # the container's own health check speaks plain http
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
if env_bool("HTTPS_PROXY_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# --- Celery ---------------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
# A task's lease: a message taken by a worker that dies before acknowledging it (acks_late) goes back to its
# queue this long after it was taken, for another worker. A running task is stopped well before (the time
# limits below), so a slow one is never handed to a second worker while it still runs.
TASK_LEASE_SECONDS = int(os.environ.get("MEMORYADMIN_TASK_LEASE_SECONDS", "3600"))
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = DATA_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir / "queue"),
        "data_folder_out": str(_queue_dir / "queue"),
        "processed_folder": str(_queue_dir / "processed"),
        # kombu's exchange tables; its default is ./control, which would litter the working directory
        "control_folder": str(_queue_dir / "control"),
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": TASK_LEASE_SECONDS,
        # every worker looks for expired leases this often (kombu's default waits ~100 s between looks)
        "unacked_restore_interval": min(10, max(1, TASK_LEASE_SECONDS // 10)),
        "unacked_restore_throttle": 1,
        # Every key the broker keeps in Redis (the queues, their exchanges' bindings, the messages being run and
        # their leases) starts with it. A test run and the load test take one of their own, so their purges and
        # their workers touch no install's task on a shared Redis database: with the queues' names alone, their
        # workers (a 6 s lease) would still hand an install's running tasks back to its queue, to run twice. An
        # install leaves it unset: its queued tasks stay where its workers look for them across an upgrade.
        "global_keyprefix": os.environ.get("MEMORYADMIN_BROKER_KEY_PREFIX", ""),
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_TIME_LIMIT = min(900, TASK_LEASE_SECONDS // 2)
CELERY_TASK_SOFT_TIME_LIMIT = min(600, CELERY_TASK_TIME_LIMIT * 2 // 3)
# Two queues, each with its own worker: what a person is waiting for (the vacuum after a lead's purge, a
# lead's "Run now" on the Maintenance page) and the scheduled sweeps, so a long nightly sweep never holds up a
# lead's work. A worker started without -Q takes both (`make demo`); the sweeps' worker also takes the
# interactive queue, so a killed interactive worker's task is taken over (README: Run it).
TASK_QUEUE_INTERACTIVE = "interactive"
TASK_QUEUE_SWEEPS = "sweeps"
CELERY_TASK_DEFAULT_QUEUE = TASK_QUEUE_INTERACTIVE
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name) for name in (TASK_QUEUE_INTERACTIVE, TASK_QUEUE_SWEEPS)
]
CELERY_TASK_ROUTES = {"curation.rules.lifecycle.*": {"queue": TASK_QUEUE_SWEEPS}}
# A worker holds only the message it runs: a busy worker keeps nothing back from an idle one.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Background curation (curation/tasks.py): each sweep's schedule is in its entry of curation/sweeps/registry.py,
# and the curation app fills this from there when it starts (the registry imports the models, which the
# settings cannot). One beat process only.
CELERY_BEAT_SCHEDULE: dict = {
    # Agents' reads wait in Redis until this writes them (services/retrieval_buffer.py); a flush that waited
    # longer than the next one would is dropped.
    "flush-retrievals": {"task": "curation.retrievals.flush", "schedule": 5.0, "options": {"expires": 10}},
}
CELERY_TIMEZONE = TIME_ZONE

# The cache holds the agent API's rate-limit counters and per-process copies' generation: Redis when there
# is one, so every worker process shares them; in memory for the embedded default. What it holds may be
# lost, so REDIS_URL may name a Redis run as an LRU cache.
REDIS_URL = os.environ.get("REDIS_URL") or (CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        # The cache's keys and the durable Redis's (both made by the cache's make_key) start with it: installs
        # and test runs sharing a Redis database keep apart (each test run takes one of its own).
        "KEY_PREFIX": os.environ.get("MEMORYADMIN_REDIS_KEY_PREFIX") or "memoryadmin",
    }
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}
# What Redis must keep until the worker has written it (agents' reads waiting for the flush): the broker's
# Redis, which must not evict anyway (a queued task would vanish), so the cache above may be an LRU cache of
# its own. A Redis whose maxmemory-policy may evict is refused for it (curation/infra/redis.py).
DURABLE_REDIS_URL = os.environ.get("MEMORYADMIN_DURABLE_REDIS_URL") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else REDIS_URL
)

# --- Curation rules ---------------------------------------------------------------------------------
# Every curation setting is declared in curation/rules/config.py: its type, range, default and meaning, and the
# environment variable of the few that have one (TWO_REVIEWER_SCOPES, MEMORYADMIN_API_RATE_LIMIT, ...). Set
# a key here to change it for this deployment, e.g. CURATION = {"DECAY_FACTOR": 0.9}; the app refuses to
# start while a value is out of range or a key is not a setting.
CURATION: dict = {}
# Admission policies per scope prefix: {"acme/ci": {"name": "ci-gate", "mode": "auto", "evaluator": "ci",
# "threshold": 0.8}}.
CURATION_ADMISSION: dict = {}
# Published memory versions: pre-publish checks and what auto-publish may release alone.
CURATION_RELEASES: dict = {}
# Holdout evaluation and the learning dashboard.
CURATION_EVALUATION: dict = {}

# Where `manage.py replay` writes its reports; the dashboard links the latest one.
REPLAY_REPORT_DIR = Path(os.environ.get("MEMORYADMIN_REPLAY_DIR", str(DATA_DIR / "replay")))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
