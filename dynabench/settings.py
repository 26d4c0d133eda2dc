"""Settings for dynabench, read from the environment (django-environ).

Every value that differs between the demo, a test run and a deployment comes from an environment
variable (or a ``NAME_FILE`` variable that points at a file holding it, for secrets). Nothing else
in the code base reads ``os.environ`` for configuration.

Variables:
    DEBUG              strict boolean, default off.
    SECRET_KEY         required unless DEBUG is on (then a fixed development key is used).
    DATABASE_URL       default: an SQLite file ``var/db.sqlite3`` for the one-command demo;
                       PostgreSQL (``postgres://user@host:port/name``, through psycopg) everywhere else.
    ALLOWED_HOSTS      comma separated; default ``127.0.0.1,localhost``.
    DYNABENCH_DATA_DIR where the real datasets live; default ``../shared/data`` beside the checkout.
    DYNABENCH_MODEL_DIR where trained models are saved; default ``var/models``.
    DYNABENCH_JOBS_SYNC run django-q2 jobs inline (tests, demo set-up); default off.
    DYNABENCH_EXPORT_KEY key of the pseudonymous annotator ids in exports; default derived from SECRET_KEY.
    DYNABENCH_MODEL_UPLOAD_MAX_BYTES largest model zip, and largest total unzipped size; default 1 GiB.
    DYNABENCH_ENDPOINT_TIMEOUT_SECONDS timeout of one call to a remote inference endpoint; default 10.
"""

import hashlib
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.FileAwareEnv()

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
DYNABENCH_VALIDATION_CLAIM_SECONDS = env.int("DYNABENCH_VALIDATION_CLAIM_SECONDS", default=600)
DYNABENCH_MODEL_UPLOAD_MAX_BYTES = env.int("DYNABENCH_MODEL_UPLOAD_MAX_BYTES", default=1024**3)
DYNABENCH_ENDPOINT_TIMEOUT_SECONDS = env.float("DYNABENCH_ENDPOINT_TIMEOUT_SECONDS", default=10.0)

# Exports replace annotator and validator ids by HMAC-SHA256(key, "<round id>:<user id>") (leaderboards.exports).
DYNABENCH_EXPORT_KEY = (
    env.str("DYNABENCH_EXPORT_KEY", default="").strip()
    or hashlib.sha256(b"dynabench-export-key:" + SECRET_KEY.encode()).hexdigest()
)

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
    "dynabench",
    "accounts",
    "tasks",
    "models_registry",
    "annotation",
    "validation",
    "leaderboards",
]

MIDDLEWARE = [
    "dynabench.middleware.RejectUnreadableFormBodyMiddleware",
    "dynabench.middleware.ExplainMethodNotAllowedMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
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
            ],
        },
    },
]

WSGI_APPLICATION = "dynabench.wsgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Without a busy timeout the dev server and a job worker trip over each other's write locks, and
    # without IMMEDIATE a transaction that reads then writes (a validation claim) fails at once with
    # "database is locked" when another writer is active, instead of waiting its turn.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 20, "transaction_mode": "IMMEDIATE"})
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
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
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
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=2_621_440)

# The JSON API (issue 5): token auth for tools, session auth for the browser; page-number pagination;
# errors as JSON with field messages; a throttle on example creation set by DYNABENCH_CREATE_RATE.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PARSER_CLASSES": [
        "dynabench.api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "dynabench.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "dynabench.api.schema.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "dynabench.api.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"example_create": env.str("DYNABENCH_CREATE_RATE", default="120/min")},
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
}

Q_CLUSTER = {
    "name": "dynabench",
    "orm": "default",
    "workers": env.int("DYNABENCH_JOB_WORKERS", default=1),
    "timeout": 3600,
    "retry": 3700,
    "max_attempts": 1,
    "sync": env.bool("DYNABENCH_JOBS_SYNC", default=False),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
