"""Settings for dynabench, read from the environment (django-environ).

Every value that differs between the demo, a test run and a deployment comes from an environment
variable. Each variable below can instead be given as ``NAME_FILE``, the path of a file holding the
value (``environ.FileAwareEnv``; the file wins over ``NAME``); that is meant for secrets, and only
``SECRET_KEY`` and ``DYNABENCH_EXPORT_KEY`` are stripped of a trailing newline. ``.env.example`` at
the repository root lists the same variables with their defaults; nothing loads a ``.env`` file
automatically, so export the variables (or let the process manager do it). A value that does not
parse or is out of range stops the start with one line naming the variable (``core.env``).

Types: *bool* is on for ``1``, ``true``, ``yes``, ``y``, ``on``, ``ok`` (any case) or any non-zero
integer, and off for anything else; *list* is comma separated, with no spaces after the commas.

Core:
    DEBUG              bool, default off. Development mode: Django's debug pages, a fixed development
                       SECRET_KEY allowed, static files served from the apps without ``collectstatic``.
    SECRET_KEY         str, required unless DEBUG is on (then a fixed development key is used).
                       The demo sets ``SECRET_KEY_FILE=var/secret_key``.
    ALLOWED_HOSTS      list, default ``127.0.0.1,localhost``. Host names this site answers to.
    CSRF_TRUSTED_ORIGINS list, default empty. Origins (``https://host``) trusted for form posts,
                       needed behind an HTTPS proxy.
    DATABASE_URL       URL, default an SQLite file ``$DYNABENCH_VAR_DIR/db.sqlite3`` for the one-command
                       demo; PostgreSQL (``postgres://user@host:port/name``, through psycopg) everywhere else.
    LOG_LEVEL          str, default ``INFO``. Level of the root logger (console); SQL stays at WARNING.
    EMAIL_BACKEND      str, default ``django.core.mail.backends.console.EmailBackend`` (mail is printed).

Files:
    DYNABENCH_VAR_DIR  path, default ``var/`` in the checkout. Holds the SQLite database, the trained and
                       uploaded models (unless DYNABENCH_MODEL_DIR says otherwise), collected static
                       files, media and the demo password.
    DYNABENCH_DATA_DIR path, default ``../shared/data`` beside the checkout. Where the real datasets are
                       read from (the importers' ``--data-dir`` default; ``docs/datasets.md``).
    DYNABENCH_MODEL_DIR path, default ``$DYNABENCH_VAR_DIR/models``. Where models are saved: trained ones
                       in ``<task slug>/<name>/``, uploaded and hub ones in ``<task slug>/<uuid>/``.
                       Several machines share it (docs/deployment.md).
    DYNABENCH_BACKBONE_DIR path, default ``$DYNABENCH_VAR_DIR/backbones``. Where an opt-in backbone packed
                       as parts (all-mpnet-base-v2) is reassembled once and checked before each use
                       (``engine/runtime/backbones.py``).
    DYNABENCH_RELEASES_DIR path, default ``$DYNABENCH_VAR_DIR/releases``. Where round releases are
                       frozen, one read-only folder per version: ``<task slug>/round-<n>/v<version>/``
                       (``cycle/releases/services.py``). Back it up: a release is never written twice.
    DYNABENCH_STATIC_ROOT path, default ``$DYNABENCH_VAR_DIR/staticfiles``. Where ``collectstatic``
                       puts the static files whitenoise serves (the Docker image collects them at build).

Limits and behaviour:
    DYNABENCH_VALIDATION_CLAIM_SECONDS int, default 600. How long an example served to a validator stays
                       reserved for them (docs/domain.md, "Validation queue").
    DYNABENCH_VALIDATION_GRACE_SECONDS int, default 600. How long after a served example's reservation
                       runs out its validator's verdict on it still counts, unless it was served to
                       someone else meanwhile (docs/domain.md, "Validation queue"); 0: none.
    DYNABENCH_VALIDATION_UNDO_SECONDS int, default 30. How long after a verdict its validator may undo it
                       (``validation.verdict_undo``; not once it settled the example).
    DYNABENCH_CREATE_RATE str, default ``120/min``. Throttle on example creation through the API, per
                       user (a DRF rate: ``N/sec``, ``N/min``, ``N/hour``, ``N/day``); over it, 429.
    DYNABENCH_CONFIDENCE_RATE str, default ``60/min``. Throttle on uncertainty mode's live confidence (the
                       create page and ``POST /api/tasks/{slug}/confidence/``), per person: each probe
                       runs the round's target models.
    DYNABENCH_SUGGESTION_RATE str, default ``20/min``. Throttle on the annotation assistant's suggestions
                       (the create page and ``POST /api/tasks/{slug}/suggestions/``), per person: each
                       one runs a generative model.
    DYNABENCH_EXPLAIN_RATE str, default ``10/min``. Throttle on explanations through the API (predict
                       with ``explain``), per user, counted in explained texts; over it, 429.
    DYNABENCH_OPENAI_RATE str, default ``30/min``. Throttle on ``POST /v1/chat/completions`` (the
                       OpenAI-compatible endpoint, docs/benchmarking.md), per user; over it, 429.
    DYNABENCH_RED_TEAM_TURN_RATE str, default ``30/min``. Throttle on red-teaming messages to a target
                       model, from the page and the API, per user; over it, 429 with Retry-After.
    DYNABENCH_MODEL_UPLOAD_MAX_BYTES int, default 1073741824 (1 GiB). Largest model zip, and largest
                       total unzipped size.
    DYNABENCH_ENDPOINT_TIMEOUT_SECONDS float, default 10. Timeout of one call to a remote inference
                       endpoint.
    DYNABENCH_ENDPOINT_ALLOWED_NETWORKS list of CIDRs, default empty. Remote endpoints may not be on
                       loopback, private, link-local, multicast, reserved or unspecified addresses
                       (server-side request forgery); the operator allows such networks here, e.g.
                       ``10.0.0.0/8`` for a model server on the same private network.
    DATA_UPLOAD_MAX_MEMORY_SIZE int, default 2621440 (2.5 MiB, Django's default). Largest request body
                       Django reads into memory (file uploads excepted).
    DYNABENCH_EXPORT_KEY str, default derived from SECRET_KEY. Key of the pseudonymous annotator and
                       validator ids in exports (docs/export-format.md); changing it (or, while it is
                       unset, SECRET_KEY) changes every pseudonym.

Production profile (docs/deployment.md; ``make serve`` sets the first two):
    REDIS_URL          URL, default empty. Set (e.g. ``redis://127.0.0.1:6379/0``): Django's cache is on
                       Redis, shared by every web and job process (API throttles, allauth's log-in and
                       sign-up rate limits, model versions), and django-q2 uses Redis as its broker.
                       Unset: a per-process memory cache and django-q2 on the ORM broker (the demo).
    DYNABENCH_DB_CONN_MAX_AGE int, default 60. Seconds a database connection is kept open for reuse
                       (Django's ``CONN_MAX_AGE``, with ``CONN_HEALTH_CHECKS`` on, so a connection that
                       died while idle is replaced before it is used); ``0`` opens one per request.
                       Not used with DYNABENCH_DB_POOL.
    DYNABENCH_DB_POOL  int, default 0 (off); ``make serve`` sets 16. On PostgreSQL, each process keeps a
                       pool of at most this many connections (psycopg_pool, Django's ``"pool"`` option;
                       2 kept open), and a request takes one from it and gives it back when it ends. The
                       ASGI workers of the production profile need it: each request runs in a thread of
                       its own there, so a connection kept per thread (CONN_MAX_AGE) would be opened
                       anew for every request (docs/serving.md, "Many streams per worker"). A request
                       waits up to 10 s for a free connection, then fails with a 500.
    DYNABENCH_HTTPS    bool, default off. The site is served over HTTPS behind a proxy that terminates
                       TLS and sets ``X-Forwarded-Proto``: secure session and CSRF cookies, redirect of
                       plain HTTP (``/health/`` excepted, for load balancers), and HSTS.
    DYNABENCH_CROSS_SITE_FRAMES bool, default off; needs DYNABENCH_HTTPS. Session and CSRF cookies
                       ``SameSite=None`` so a worker's session survives inside another site's frame: MTurk
                       shows an ExternalQuestion HIT in a frame on mturk.com, where browsers do not send
                       ``SameSite=Lax`` cookies (docs/crowd.md, "MTurk"). CSRF tokens still guard posts.
    DYNABENCH_HSTS_SECONDS int, default 31536000 (one year) when DYNABENCH_HTTPS is on, else 0.
                       ``Strict-Transport-Security`` max-age, with ``includeSubDomains`` and ``preload``
                       (preload takes effect only once the domain is submitted to the browsers' list).
    DYNABENCH_TRUSTED_PROXY_COUNT int, default 0. Reverse proxies in front of gunicorn that append to
                       ``X-Forwarded-For``; the client's address (allauth's per-address log-in and sign-up
                       limits) is read that many hops from the right. Leave 0 when nothing sits in front:
                       the header could then be forged.
    DYNABENCH_CSP_REPORT_URI str, default empty. Where browsers report Content-Security-Policy
                       violations; the policy itself is fixed (``CONTENT_SECURITY_POLICY`` below).

Models (engine/runtime/classifier.py):
    DYNABENCH_MODEL_CACHE_BYTES int, default 2147483648 (2 GiB). Bound of each process's cache of
                       loaded models, counted as the size of their weight files; the least recently used
                       models are dropped first (the one in use always stays).
    DYNABENCH_INFERENCE_TIMEOUT_SECONDS float, default 20. Longest wait for one local model call; after
                       it the call fails with ``InferenceError`` and the example is stored with its
                       prediction marked failed, scored again later (remote endpoints have
                       DYNABENCH_ENDPOINT_TIMEOUT_SECONDS instead).
    DYNABENCH_INFERENCE_BATCHING bool, default off. On, concurrent predictions for one model in one
                       process run as one forward (``engine/runtime/batching.py``); off, each runs alone.
                       Off by default: with 50 annotators on the production profile it measured 18.8
                       examples/s on and 21.0 off (docs/deployment.md), the platform's own work per
                       request, not the forward, being the bottleneck.
    DYNABENCH_INFERENCE_BATCH_WINDOW_MS float, default 2. How long the batcher waits for more requests
                       after the first; 0 takes only those already queued.
    DYNABENCH_INFERENCE_BATCH_MAX int, default 32. Most texts in one gathered batch.
    DYNABENCH_MODEL_RUNTIME str, default onnx-int8. The runtime a model is registered with when its
                       ONNX export passes its check (``engine/runtime/onnx_export.py``, docs/onnx.md):
                       ``onnx-int8``, ``onnx-fp32`` or ``torch`` (no export at all).
    DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP float, default 0.005. On held-apart inputs with gold labels (a
                       trained model's dev and test examples), the most accuracy int8 may lose against
                       PyTorch and still be chosen: a fraction from 0 to 0.1.
    DYNABENCH_ONNX_INT8_MIN_AGREEMENT float, default 0.995. Without gold labels, the least share of
                       held-apart texts whose int8 label (or span answer) equals PyTorch's.
    DYNABENCH_ONNX_FP32_MIN_AGREEMENT float, default 1.0. The same for the fp32 graph.
    DYNABENCH_ONNX_INT8_PLANS list, default all,ffn-output-fp32,ffn-fp32. Which MatMuls the int8 graph
                       may keep in fp32, tried fastest first until one passes the int8 check
                       (``engine/runtime/int8_plans.py``): ``all`` (every MatMul int8),
                       ``ffn-output-fp32``, ``ffn-fp32`` (the whole feed-forward block fp32).
    DYNABENCH_ONNX_THREADS int, default 0. Intra-op threads of each ONNX Runtime session (0: one per core).
    DYNABENCH_ONNX_BULK_WORKERS int, default 0. In bulk prediction (evaluations, export checks), how many
        batches of one call run side by side on single-threaded ONNX Runtime sessions (0: one per core;
        1: one after the other on the latency session). engine/runtime/onnx_graph.py.
    DYNABENCH_VECTOR_CACHE_BYTES int, default 67108864 (64 MiB). Bound of each process's cache of ONNX
                       sentence vectors, shared by models whose graphs are byte-identical (quick-recipe
                       targets of one task; ``engine/runtime/vector_cache.py``); 0 turns it off. Timed
                       throughput passes never read it.
    DYNABENCH_PRELOAD_TARGETS bool, default on. Each gunicorn worker loads the open rounds' target
                       models in the background when it starts (``gunicorn.conf.py``).
    DYNABENCH_GENERATION_SLOTS int >= 1, default empty. Local generative answers (and multiple-choice
                       scorings) one process runs at once; the others wait in line and their readers are
                       told how many are ahead (``engine/runtime/slots.py``, docs/generative.md). The
                       streamed answers of one model decode together in one batch
                       (``engine/runtime/batcher.py``). Empty: half a web process's request threads
                       (rounded down, at least 1: 2 in a gunicorn worker of 4 threads), since each
                       streamed answer holds a thread; 8 in the demo's server, whose answers leave its
                       pool (``core/request_threads.py``); 1 in other processes.
    DYNABENCH_GENERATION_QUEUE int >= 0, default empty: the most requests one web process lets wait for
                       a generation slot; one more is refused at once, 503 with Retry-After and how
                       many wait, so that waiting requests never hold the threads ordinary pages need.
                       Empty: the process's request threads - DYNABENCH_GENERATION_SLOTS - half the
                       threads (rounded up), at least 0: with the default slots, 0 (a request that finds
                       every slot answering is refused at once; ``slots.waiting_bound``,
                       docs/serving.md); in the demo's server, 3 x the slots (24: its waiters hold
                       no page's thread).

Background jobs (django-q2):
    DYNABENCH_JOB_WORKERS int, default 1. Worker processes of ``manage.py qcluster``.
    DYNABENCH_JOB_NICENESS int 0-19, default 19. The job workers' niceness: background jobs take only
                       the CPU the web leaves idle (``core.job_priority``); 0 keeps them at the cluster's.
    DYNABENCH_EVALUATION_STALE_SECONDS float, default 120. A running evaluation whose heartbeat (every
                       quarter of this) stopped this long ago was cut off with its worker: the sweep
                       runs it again (``leaderboards.scheduling``, "Heartbeat and sweep").
    DYNABENCH_REQUEUE_PENDING_SECONDS float, default 600. A pending evaluation nobody took for this long
                       (the broker was down when it was requested) is queued again by the sweep.
    DYNABENCH_JOBS_SYNC bool, default off. Run jobs inline in the calling process (tests, demo set-up)
                       instead of queueing them for the cluster.

Evaluation throughput (``leaderboards.evaluation``, "throughput"):
    DYNABENCH_THROUGHPUT_PASSES int, default 5 (at least 1). Timed passes whose median is a Score's
                       throughput; their spread sets the Dynascore's noise guard. 1 keeps the one pass of
                       the predictions (no extra cost, no measured spread).
    DYNABENCH_THROUGHPUT_SAMPLE int, default 128 (at least 1). Items of each timed pass: evenly spaced
                       over the dataset, the same for every model; a dataset this small or smaller is timed
                       whole, its prediction pass being the first pass. Bounds the extra cost of an
                       evaluation at PASSES x SAMPLE predictions.
    DYNABENCH_THROUGHPUT_SAMPLE_CHARS int, default 16000 (0: no bound). Fewer items per timed pass on a
                       dataset of long items: at most this many characters of its average item, at least
                       16 items (ANLI round 1 test pairs, 388 characters on average: 41; short statements: SAMPLE).

Read elsewhere (not through this module):
    DEMO_PASSWORD      the password of the demo accounts, read by ``manage.py setup_demo`` (``os.environ``,
                       so no ``_FILE`` form); ``--password`` wins over it. Unset: the password remembered
                       in ``$DYNABENCH_VAR_DIR/demo_password``, else a new one.
    DEMO_PILOT         ``0``: ``manage.py setup_demo`` runs no simulated red-teaming pilot (as
                       ``--no-pilot``; docs/demo.md, "The red-teaming pilot"). Default: it runs once.
    DYNABENCH_OPERATOR the username recorded as the actor of the audit log for management commands run
                       without ``--actor`` (``core/audit.py``); unset, the entries have no actor and
                       carry the OS user in ``additional_data``.
    DJANGO_SETTINGS_MODULE default ``dynabench.settings`` (``manage.py``, ``wsgi.py``, ``asgi.py``).
    DYNABENCH_HOST, DYNABENCH_PORT  where ``scripts/demo.sh`` and gunicorn (``gunicorn.conf.py``) serve;
                       default ``127.0.0.1`` and ``8000``.
    DYNABENCH_WEB_WORKERS, DYNABENCH_WEB_TIMEOUT  gunicorn's worker processes (default two per core) and seconds
                       before a silent worker is replaced (default 60), read by ``gunicorn.conf.py``.
    DEMO_ARGS          arguments ``scripts/demo.sh`` passes to ``setup_demo`` (e.g. ``--tasks sentiment``);
                       when set, the whole set-up runs before serving. The script also sets DEBUG (default
                       0 there), SECRET_KEY_FILE, HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1.
    HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE  read by huggingface_hub and transformers: no network access to
                       the model hub; a model registered by hub id then fails its check at once with a
                       message (``models_registry.hub``). The demo, ``scripts/manage.sh`` and the tests
                       set them.
    PYTHON, DATABASE_URL, PYTEST_ARGS  for the Makefile: the interpreter that creates ``.venv`` (default
                       ``python3``), the database of ``make test`` and ``make lint`` (default
                       ``postgres://postgres@127.0.0.1:5432/dynabench``) and extra pytest arguments.
"""

import hashlib
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from core.env import Env

BASE_DIR = Path(__file__).resolve().parent.parent


env = Env()

DEBUG = env.bool("DEBUG", default=False)

SECRET_KEY = env.str("SECRET_KEY", default="").strip()
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "Set SECRET_KEY (or SECRET_KEY_FILE), or run with DEBUG=1 for development."
        )
    SECRET_KEY = "django-insecure-development-only-key"  # noqa: S105 - only ever used with DEBUG on

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

VAR_DIR = Path(env.str("DYNABENCH_VAR_DIR", default=str(BASE_DIR / "var")))
DYNABENCH_DATA_DIR = Path(env.str("DYNABENCH_DATA_DIR", default=str(BASE_DIR.parent / "shared" / "data")))
DYNABENCH_MODEL_DIR = Path(env.str("DYNABENCH_MODEL_DIR", default=str(VAR_DIR / "models")))
DYNABENCH_RELEASES_DIR = Path(env.str("DYNABENCH_RELEASES_DIR", default=str(VAR_DIR / "releases")))
DYNABENCH_BACKBONE_DIR = Path(env.str("DYNABENCH_BACKBONE_DIR", default=str(VAR_DIR / "backbones")))
DYNABENCH_VALIDATION_CLAIM_SECONDS = env.int("DYNABENCH_VALIDATION_CLAIM_SECONDS", default=600, minimum=1)
DYNABENCH_VALIDATION_GRACE_SECONDS = env.int("DYNABENCH_VALIDATION_GRACE_SECONDS", default=600, minimum=0)
DYNABENCH_VALIDATION_UNDO_SECONDS = env.int("DYNABENCH_VALIDATION_UNDO_SECONDS", default=30, minimum=0)
DYNABENCH_MODEL_UPLOAD_MAX_BYTES = env.int("DYNABENCH_MODEL_UPLOAD_MAX_BYTES", default=1024**3, minimum=1)
DYNABENCH_ENDPOINT_TIMEOUT_SECONDS = env.float(
    "DYNABENCH_ENDPOINT_TIMEOUT_SECONDS", default=10.0, minimum=0.1
)
# Networks a remote endpoint may be on although they are loopback, private, link-local...
# (engine/endpoints/addresses.py).
DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = env.networks("DYNABENCH_ENDPOINT_ALLOWED_NETWORKS", default=[])

# Exports replace annotator and validator ids by HMAC-SHA256(key, "<round id>:<user id>") (annotation/exports.py).
DYNABENCH_EXPORT_KEY = (
    env.str("DYNABENCH_EXPORT_KEY", default="").strip()
    or hashlib.sha256(b"dynabench-export-key:" + SECRET_KEY.encode()).hexdigest()
)

# The audit log (core/audit.py): changes as JSON values ({field: [before, after]}), not their text;
# nothing logged for fixtures loaded raw.
AUDITLOG_STORE_JSON_CHANGES = True
AUDITLOG_DISABLE_ON_RAW_SAVE = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "allauth",
    "allauth.account",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "csp",
    "health_check",
    "auditlog",
    "core",
    "accounts",
    "tasks",
    "models_registry",
    "annotation",
    "validation",
    "crowd",
    "generative_bench",
    "leaderboards",
    "cycle",
    "dynabench",
    "demo",
]

MIDDLEWARE = [
    "core.middleware.RejectUnreadableFormBodyMiddleware",
    "core.middleware.ExplainMethodNotAllowedMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After authentication: the audit log's actor is the request's user, read when an entry is written
    # (so an API token's user, authenticated in the view, not the anonymous session; core/audit.py).
    "core.audit.AuditMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # After the clickjacking and CSP middlewares: an MTurk worker's pages may be framed by MTurk only.
    "crowd.framing.MTurkFramingMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # A request refused because the line for a local model is full: 503 with Retry-After on every route.
    "models_registry.queue_full.QueueFullMiddleware",
]

ROOT_URLCONF = "dynabench.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "dynabench" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "crowd.context_processors.study_progress",
            ],
        },
    },
]

WSGI_APPLICATION = "dynabench.wsgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
# Persistent connections: a request reuses its worker's connection instead of opening one (a few ms on
# PostgreSQL); the health check replaces a connection the server closed (a restart) before it is used.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DYNABENCH_DB_CONN_MAX_AGE", default=60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DB_POOL_SIZE = env.int("DYNABENCH_DB_POOL", default=0, minimum=0)
if DB_POOL_SIZE and DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # A pool replaces persistent connections (Django refuses both); with CONN_HEALTH_CHECKS, Django has
    # the pool check a connection before lending it.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DB_POOL_SIZE),
        "max_size": DB_POOL_SIZE,
        "timeout": 10,
    }
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Without a busy timeout the dev server and a job worker trip over each other's write locks, and
    # without IMMEDIATE a transaction that reads then writes (a validation claim) fails at once with
    # "database is locked" when another writer is active, instead of waiting its turn. Write-ahead
    # logging: readers (pages, the job cluster, the background set-up) and the one writer do not block
    # each other, so a commit does not wait for every reader to finish; synchronous=NORMAL syncs at
    # checkpoints, not at every commit (safe against a crashed process; a power cut may lose the last
    # commits, not the database). The mode is stored in the file: db.sqlite3-wal and -shm live beside it.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_REDIRECT_URL = "/"
ACCOUNT_LOGOUT_REDIRECT_URL = "/"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
ACCOUNT_SIGNUP_FIELDS = ["username*", "email", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
# allauth's rate limits are on with its defaults (failed log-ins: 10 a minute per address and 5 in 5
# minutes per username; log-ins 30 a minute and sign-ups 20 a minute per address). They count in the
# cache, so across processes only with REDIS_URL set.
ALLAUTH_TRUSTED_PROXY_COUNT = env.int("DYNABENCH_TRUSTED_PROXY_COUNT", default=0, minimum=0)
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("DYNABENCH_STATIC_ROOT", default=str(VAR_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG
MEDIA_ROOT = VAR_DIR / "media"

# Request bodies: a statement is at most a few thousand characters; nothing legitimate needs more.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440, minimum=1)

# The JSON API (docs/api.md): token auth for tools, session auth for the browser; page-number pagination;
# errors as JSON with field messages; a throttle on example creation set by DYNABENCH_CREATE_RATE.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PARSER_CLASSES": [
        "core.api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "core.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "core.api.schema.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "core.api.errors.exception_handler",
    "NUM_PROXIES": ALLAUTH_TRUSTED_PROXY_COUNT,
    "DEFAULT_THROTTLE_RATES": {
        "example_create": env.rate("DYNABENCH_CREATE_RATE", default="120/min"),
        "confidence_probe": env.rate("DYNABENCH_CONFIDENCE_RATE", default="60/min"),
        "assistant_suggestion": env.rate("DYNABENCH_SUGGESTION_RATE", default="20/min"),
        "model_explain": env.rate("DYNABENCH_EXPLAIN_RATE", default="10/min"),
        "openai_chat": env.rate("DYNABENCH_OPENAI_RATE", default="30/min"),
        "red_team_turn": env.rate("DYNABENCH_RED_TEAM_TURN_RATE", default="30/min"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Dynabench API",
    "DESCRIPTION": "Dynamic adversarial data collection and benchmarking: tasks, rounds, examples, "
    "validations, models, datasets and leaderboards.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A turn's status is in two components (a turn, a side-by-side answer): one enum, named once.
    "ENUM_NAME_OVERRIDES": {"TurnStatusEnum": "annotation.models.Turn.Status"},
}

# One cache for every process when Redis is there: DRF's throttles, allauth's rate limits and the
# model versions (engine/runtime/classifier.py) must count across gunicorn workers and machines.
REDIS_URL = env.redis_url("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            # Django's Redis cache, except that an outage is logged and skipped instead of raised
            # (core/cache.py; docs/deployment.md, "When Redis is down").
            "BACKEND": "core.cache.FailSoftRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "dynabench",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

DYNABENCH_MODEL_CACHE_BYTES = env.int("DYNABENCH_MODEL_CACHE_BYTES", default=2 * 1024**3, minimum=0)
DYNABENCH_INFERENCE_TIMEOUT_SECONDS = env.float(
    "DYNABENCH_INFERENCE_TIMEOUT_SECONDS", default=20.0, minimum=0
)
DYNABENCH_INFERENCE_BATCHING = env.bool("DYNABENCH_INFERENCE_BATCHING", default=False)
DYNABENCH_INFERENCE_BATCH_WINDOW_MS = env.float("DYNABENCH_INFERENCE_BATCH_WINDOW_MS", default=2.0, minimum=0)
DYNABENCH_INFERENCE_BATCH_MAX = env.int("DYNABENCH_INFERENCE_BATCH_MAX", default=32, minimum=1)
DYNABENCH_MODEL_RUNTIME = env.str("DYNABENCH_MODEL_RUNTIME", default="onnx-int8")
# The values of engine.runtime.runtimes.RUNTIMES (the kernel cannot import an app to check them).
if DYNABENCH_MODEL_RUNTIME not in ("torch", "onnx-fp32", "onnx-int8"):
    raise ImproperlyConfigured(
        f"DYNABENCH_MODEL_RUNTIME={DYNABENCH_MODEL_RUNTIME!r}: expected torch, onnx-fp32 or onnx-int8"
    )
DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP = env.float("DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP", default=0.005)
DYNABENCH_ONNX_INT8_MIN_AGREEMENT = env.float("DYNABENCH_ONNX_INT8_MIN_AGREEMENT", default=0.995)
DYNABENCH_ONNX_FP32_MIN_AGREEMENT = env.float("DYNABENCH_ONNX_FP32_MIN_AGREEMENT", default=1.0)
# A fraction, not points: 0.5 would allow 50 points. More than 10 points is no check at all.
if not 0.0 <= DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP <= 0.1:
    raise ImproperlyConfigured(
        f"DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP={DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP!r}: expected a "
        "fraction from 0 to 0.1 (0.005 is half a point of accuracy)"
    )
for _name in ("DYNABENCH_ONNX_INT8_MIN_AGREEMENT", "DYNABENCH_ONNX_FP32_MIN_AGREEMENT"):
    if not 0.0 <= globals()[_name] <= 1.0:
        raise ImproperlyConfigured(f"{_name}={globals()[_name]!r}: expected a fraction from 0 to 1")
# Spaces around the names and empty items are dropped; an empty value means the default.
DYNABENCH_ONNX_INT8_PLANS = [
    name.strip() for name in env.list("DYNABENCH_ONNX_INT8_PLANS", default=[]) if name.strip()
] or ["all", "ffn-output-fp32", "ffn-fp32"]
# The names of engine.runtime.int8_plans.PLANS (the kernel cannot import an app to check them).
_unknown_plans = sorted(set(DYNABENCH_ONNX_INT8_PLANS) - {"all", "ffn-output-fp32", "ffn-fp32"})
if _unknown_plans:
    raise ImproperlyConfigured(
        f"DYNABENCH_ONNX_INT8_PLANS names {', '.join(map(repr, _unknown_plans))}: expected a "
        "comma-separated choice of all, ffn-output-fp32, ffn-fp32 (tried fastest first, in that order)"
    )
DYNABENCH_ONNX_THREADS = env.int("DYNABENCH_ONNX_THREADS", default=0, minimum=0)
DYNABENCH_ONNX_BULK_WORKERS = env.int("DYNABENCH_ONNX_BULK_WORKERS", default=0, minimum=0)
DYNABENCH_VECTOR_CACHE_BYTES = env.int("DYNABENCH_VECTOR_CACHE_BYTES", default=64 * 2**20, minimum=0)
DYNABENCH_PRELOAD_TARGETS = env.bool("DYNABENCH_PRELOAD_TARGETS", default=True)
# Read again from the environment by engine/runtime/slots.py (which imports no settings); read
# here so that a value that does not parse stops the start with its name.
# Empty: derived from the web server's threads when a web process starts (models_registry.warmup), 1
# in every other process.
DYNABENCH_GENERATION_SLOTS = (
    env.int("DYNABENCH_GENERATION_SLOTS", minimum=1)
    if env.str("DYNABENCH_GENERATION_SLOTS", default="").strip()
    else None
)
# None: derived from the web server's threads when a web process starts (models_registry.warmup).
DYNABENCH_GENERATION_QUEUE = (
    env.int("DYNABENCH_GENERATION_QUEUE", minimum=0)
    if env.str("DYNABENCH_GENERATION_QUEUE", default="").strip()
    else None
)
DYNABENCH_EVALUATION_STALE_SECONDS = env.float("DYNABENCH_EVALUATION_STALE_SECONDS", default=120.0, minimum=1)
DYNABENCH_REQUEUE_PENDING_SECONDS = env.float("DYNABENCH_REQUEUE_PENDING_SECONDS", default=600.0, minimum=1)

# Evaluation throughput: the median of this many timed passes over this many items (docstring above).
DYNABENCH_THROUGHPUT_PASSES = env.int("DYNABENCH_THROUGHPUT_PASSES", default=5, minimum=1)
DYNABENCH_THROUGHPUT_SAMPLE = env.int("DYNABENCH_THROUGHPUT_SAMPLE", default=128, minimum=1)
DYNABENCH_THROUGHPUT_SAMPLE_CHARS = env.int("DYNABENCH_THROUGHPUT_SAMPLE_CHARS", default=16000, minimum=0)

# HTTPS behind a TLS-terminating proxy (docs/deployment.md, "HTTPS").
DYNABENCH_HTTPS = env.bool("DYNABENCH_HTTPS", default=False)
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = DYNABENCH_HTTPS
SECURE_REDIRECT_EXEMPT = [r"^health/"]
if env.bool("DYNABENCH_CROSS_SITE_FRAMES", default=False):
    if not DYNABENCH_HTTPS:
        # Browsers drop SameSite=None cookies that are not also Secure: the session would be lost.
        raise ImproperlyConfigured(
            "DYNABENCH_CROSS_SITE_FRAMES needs DYNABENCH_HTTPS=1 (SameSite=None cookies must be Secure)."
        )
    SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "None"
if DYNABENCH_HTTPS:
    # Only behind a proxy that sets the header itself: trusted from anyone else, it could be forged.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env.int(
    "DYNABENCH_HSTS_SECONDS", default=31_536_000 if DYNABENCH_HTTPS else 0, minimum=0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp): scripts only from this site, so injected markup cannot run
# script. Styles allow inline because the Django admin's and DRF's browsable API templates carry
# style attributes and <style> blocks; our own pages need neither. Images allow data: for Swagger UI.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
if env.str("DYNABENCH_CSP_REPORT_URI", default=""):
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["report-uri"] = [env.str("DYNABENCH_CSP_REPORT_URI")]

DYNABENCH_JOB_NICENESS = env.int("DYNABENCH_JOB_NICENESS", default=19, minimum=0, maximum=19)
Q_CLUSTER = {
    "name": "dynabench",
    "orm": "default",
    "workers": env.int("DYNABENCH_JOB_WORKERS", default=1, minimum=1),
    "timeout": 3600,
    "retry": 3700,
    "max_attempts": 1,
    # django-q2 takes up to this many jobs ahead of its workers; a killed cluster delays (ORM broker) or
    # loses (Redis) what it had taken, so take as few as possible.
    "queue_limit": 1,
    "sync": env.bool("DYNABENCH_JOBS_SYNC", default=False),
}
if REDIS_URL:
    # Redis as the broker (several worker machines); the ORM broker stays the demo's. django-q2's
    # Redis broker does not redeliver a job whose worker died: the stale-job sweeps
    # (leaderboards.scheduling.fail_stale_evaluations and its training twin) hand such work back.
    del Q_CLUSTER["orm"]
    Q_CLUSTER["redis"] = REDIS_URL

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.log_level("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
