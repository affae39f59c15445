"""Settings come from the environment; with nothing set, the embedded default runs on a bare machine:
SQLite in ./data and a Celery broker on the filesystem (no server needed)."""

import os
import secrets
import time
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
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
    wins and the others read it, so they all sign with one key."""
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
    raise RuntimeError("SECRET_KEY must be a random value of 50 or more characters "
                       "(python -c 'import secrets; print(secrets.token_urlsafe(50))')")
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
    "curation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "curation.middleware.UnstorableInputMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "curation.middleware.RequestIdMiddleware",
    "csp.middleware.CSPMiddleware",
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
                "curation.permissions.abilities",
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
# A read replica for agents' retrieval (curation/db_router.py): the reads inside retrieval_reads() go there.
# Its tests mirror the primary's test database.
if os.environ.get("DATABASE_REPLICA_URL"):
    _replica = dj_database_url.parse(os.environ["DATABASE_REPLICA_URL"],
                                     conn_max_age=DATABASES["default"]["CONN_MAX_AGE"])
    DATABASES["replica"] = {**DATABASES["default"], **_replica, "TEST": {"MIRROR": "default"}}
RETRIEVAL_ON_REPLICA = "replica" in DATABASES
DATABASE_ROUTERS = ["curation.db_router.ReplicaRouter"]
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server and the worker read while one of them writes. Writers take turns: a
    # transaction takes the write lock when it begins (IMMEDIATE), and one that finds it taken waits up to
    # `timeout` seconds for it. A deferred transaction would read first and then fail at once with
    # "database is locked" when it came to write after another writer (SQLite does not wait for a lock
    # it cannot get without a deadlock), so the loser of a race would answer 500 instead of being told.
    DATABASES["default"]["OPTIONS"] = {
        # A throw-away database (manage.py replay's) may skip the disk flush of each commit: losing it to a
        # power cut loses nothing anyone keeps.
        "init_command": "PRAGMA journal_mode=WAL;" + (
            "PRAGMA synchronous=OFF;" if os.environ.get("MEMORYADMIN_THROWAWAY_DATABASE") == "1" else ""),
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # The tests' database is a file too, so that their threads meet the same locking as the web server
    # and the worker do (an in-memory database shared between threads locks by table instead).
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-memoryadmin.sqlite3")}

# PostgreSQL in production: `migrate` runs as the tables' owner and, when this names the role the web
# server and workers connect as, grants that role only what it needs (curation/db_roles.py).
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
AXES_CLIENT_IP_CALLABLE = "curation.client_address.client_address"
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
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SOFT_TIME_LIMIT = 600
CELERY_TASK_TIME_LIMIT = 900
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Background curation (curation/tasks.py). Decay runs before archive (archive recomputes the decayed value
# itself, so the order only affects what the Maintenance page shows in between); capacity runs often so an
# approval that goes over a scope's budget is settled within minutes. One beat process only.
_LIFECYCLE_SCHEDULE = {
    "decay": crontab(minute=0, hour=2),
    "archive": crontab(minute=20, hour=2),
    "revive": crontab(minute=40),
    "unused": crontab(minute=0, hour=3),
    "low_utility": crontab(minute=20, hour=3),
    "review_due": crontab(minute=0, hour=6),
    "capacity": crontab(minute="*/15"),
    # The queues' detection: conflicts hourly (ingest compares a candidate with a few partners only),
    # consolidation nightly after the archiving sweeps.
    "conflicts": crontab(minute=10),
    "consolidation": crontab(minute=40, hour=3),
    "skill_nomination": crontab(minute=0, hour=4),
    # Queued when a forget is approved; the schedule catches a purge whose message was lost (a run with
    # no new purge is one indexed read).
    "vacuum_purged": crontab(minute="*/30"),
}
CELERY_BEAT_SCHEDULE: dict = {
    f"lifecycle-{name}": {
        "task": f"curation.lifecycle.{name}",
        "schedule": schedule,
        "kwargs": {"triggered_by": "beat"},
        # A run that waited longer than its own period is stale: the next one will do the same work.
        "options": {"expires": 15 * 60 if name == "capacity" else 3600},
    }
    for name, schedule in _LIFECYCLE_SCHEDULE.items()
}
CELERY_TIMEZONE = TIME_ZONE

# The cache holds the agent API's rate-limit counters: Redis when there is one, so every worker
# process shares them; in memory for the embedded default.
REDIS_URL = os.environ.get("REDIS_URL") or (CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                "KEY_PREFIX": "memoryadmin"}
    if REDIS_URL else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}

# --- Curation rules; every threshold can be overridden here ----------------------------------------
CURATION = {
    "SELF_SIGNAL_CAP": 0.85,          # self-made lessons cannot pass this without external evidence
    "HUMAN_CORRECTION_CONFIDENCE": 0.95,
    "CEILING": 0.95,
    "FLOOR": 0.05,
    "DEFAULT_CONFIDENCE": {"self": 0.7, "independent": 0.8, "external": 0.85},
    "SUCCESS_STEP": 0.05,
    "FAILURE_STEP": 0.2,
    "DECAY_FACTOR": 0.95,             # per DECAY_PERIOD_DAYS without verification
    "DECAY_PERIOD_DAYS": 30,
    "ARCHIVE_BELOW": 0.3,
    "RETRIEVE_AT_LEAST": 0.5,
    "RETRIEVE_LIMIT": 5,
    "DEFER_HOURS": 24,
    "QUEUE_PAGE_SIZE": 50,
    # Counts stop here ("more than 1,000 waiting"): past it a count reads the same 1,001 index entries at any
    # queue size, so a page with 100,000 waiting costs what one with 1,000 does.
    "QUEUE_COUNT_CAP": 1000,
    # Scope prefixes whose candidates need two reviewers' approval (a lead's page overrides per prefix;
    # the longest matching prefix wins). Comma-separated in the environment.
    "TWO_REVIEWER_SCOPES": [p.strip() for p in os.environ.get("TWO_REVIEWER_SCOPES", "").split(",") if p.strip()],
    "SIMILAR_THRESHOLD": 0.35,
    # Background policies.
    "UNUSED_WINDOW_DAYS": 30,         # periodic deletion: older than W and retrieved <= alpha times in W
    "UNUSED_MAX_RETRIEVALS": 0,       # alpha
    "LOW_UTILITY_MIN_RETRIEVALS": 3,  # history-based deletion: retrieved >= n times ...
    "LOW_UTILITY_BELOW": 0.4,         # ... with average utility < beta
    "SCOPE_CAPACITY": {},             # {"acme/billing-api": 200}: active entries allowed per scope
    "CAPACITY_SPARES_UNRETRIEVED": False,  # True: capacity never displaces an entry no agent has retrieved yet
    "UNUSED_SPARES_VERIFIED": True,   # periodic deletion spares an entry verified (a success) within W
    "SWEEP_BATCH_SIZE": 5000,
    "SWEEP_LEASE_SECONDS": 300,       # a run with no heartbeat for this long (one per batch) holds no lock
    # A detecting sweep's run stops at the first batch boundary after this long and the next run resumes
    # there: well inside the worker's soft time limit, since a batch itself takes time.
    "DETECTION_SLICE_SECONDS": int(os.environ.get("MEMORYADMIN_DETECTION_SLICE_SECONDS", "300")),
    # The partners one entry is compared with in a detecting sweep, most relevant first (see README).
    "DETECTION_PARTNERS_PER_ENTRY": 100,
    # Skill promotion gates. Nominated: a procedure or success pattern with at least
    # SKILL_MIN_HITS hits, average utility at least SKILL_MIN_AVG_UTILITY, no failure among its last
    # SKILL_RECENT_WINDOW uses, a rollback note and no open conflict. Approved (by a lead): at least
    # SKILL_TRIALS_REQUIRED trial runs reported on the current draft, all of them successful.
    "SKILL_MIN_HITS": 10,
    "SKILL_MIN_AVG_UTILITY": 0.8,
    "SKILL_RECENT_WINDOW": 10,
    "SKILL_TRIALS_REQUIRED": 5,
    # The agent API.
    "API_MAX_BODY_BYTES": 1024 * 1024,
    "API_BATCH_MAX": 500,
    "API_RETRIEVE_MAX_K": 20,
    # Retrieval answers cached per (version, scopes, query, k, floor); a publish is the invalidation, this
    # only bounds how long an unasked answer stays in Redis. 0: no cache.
    "RETRIEVAL_CACHE_SECONDS": int(os.environ.get("MEMORYADMIN_RETRIEVAL_CACHE_SECONDS", "300")),
    "API_RATE_LIMIT": int(os.environ.get("MEMORYADMIN_API_RATE_LIMIT", "600")),  # requests per token per minute
    "API_BAD_TOKEN_LIMIT": int(os.environ.get("MEMORYADMIN_API_BAD_TOKEN_LIMIT", "30")),  # per address per minute
    "IDEMPOTENCY_KEEP_HOURS": 24,     # how long a submission's answer is kept for a retry with its Idempotency-Key
    # Vector retrieval: {"acme": 1536} fixes the embedding dimension of a scope prefix; elsewhere the first
    # entry of a scope tree (its first segment) that carries an embedding fixes it.
    "EMBEDDING_DIMENSIONS": {},
    # How a task's outcome moves the confidence of the lessons it used (lift.py): "lift" judges each lesson
    # against the baseline (tasks without it); "steps" is the design notes' rule, SUCCESS_STEP up on a
    # success and FAILURE_STEP down on a failure to every lesson used, which balances at 80% success.
    "OUTCOME_RULE": os.environ.get("MEMORYADMIN_OUTCOME_RULE", "lift"),
    "LIFT_PRIOR_TASKS": 20,           # pseudo-tasks at the baseline's rate: a handful of outcomes moves little
    "LIFT_GAIN": 1.0,                 # confidence moved per unit of estimated lift (x the lesson's share)
    "LIFT_MIN_TASKS": 10,             # tasks with a lesson before its lift gets a verdict
    "LIFT_WINDOW_DAYS": 90,           # the outcomes the lift is estimated from
    # Under the steps rule: a task that used an active entry failed: send the entry back for a recheck.
    "RECHECK_ON_FAILURE": True,
}

# Admission policies per scope prefix (the longest prefix wins; a lead's row on the Admission page replaces
# the setting of the same prefix): {"acme/ci": {"name": "ci-gate", "mode": "auto", "evaluator": "ci",
# "threshold": 0.8}}. Modes: manual (people decide), auto, all, none.
CURATION_ADMISSION = {}

# Where `manage.py replay` writes its reports; the dashboard links the latest one.
REPLAY_REPORT_DIR = Path(os.environ.get("MEMORYADMIN_REPLAY_DIR", str(DATA_DIR / "replay")))

# Published memory versions (issue 13): the pre-publish checks and what auto-publish may release alone.
CURATION_RELEASES = {
    "FAILED_OUTCOME_DAYS": 14,        # a failed task outcome this recent is a pre-publish warning
    # Auto-publish releases a pending entry alone only when every unreleased Event of it is one of these
    # and no pre-publish check warns about it; anything else waits for a lead.
    "AUTO_PUBLISH_ACTIONS": ["outcome_success", "add_evidence", "revive"],
}
# Holdout evaluation and the learning dashboard.
CURATION_EVALUATION = {
    # Scope prefix -> share of tasks (by task_ref) answered with no memory; the longest covering prefix
    # wins, and a lead's setting on the Holdout page overrides the one here. None set: no holdout.
    "HOLDOUT_FRACTIONS": {},
    # The same, for the share served people's rules only (human corrections and preferences).
    "RULES_ONLY_FRACTIONS": {},
    "MIN_TASKS_PER_ARM": 30,          # below this in either arm the verdict is "not enough tasks yet"
    "LESSON_MIN_RETRIEVALS": 20,      # lessons that help or hurt: tasks that retrieved it, at least
    "RECURRING_MIN_FAILURES": 3,      # recurring failures: failed tasks that retrieved the entry, at least
    "LESSONS_SHOWN": 10,              # each way
}
CELERY_BEAT_SCHEDULE["lifecycle-auto_publish"] = {
    "task": "curation.lifecycle.auto_publish", "schedule": crontab(minute=50),
    "kwargs": {"triggered_by": "beat"}, "options": {"expires": 3600},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

DATA_DIR.mkdir(parents=True, exist_ok=True)
STATIC_ROOT.mkdir(exist_ok=True)
if CELERY_BROKER_URL.startswith("filesystem://"):
    for _folder in ("queue", "processed", "control"):
        (DATA_DIR / "broker" / _folder).mkdir(parents=True, exist_ok=True)
