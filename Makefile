# The entry points of the README. Each creates .venv on first use and reuses it after.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= $(or $(DATABASE_URL),postgres://postgres@127.0.0.1:5432/dynabench)

.PHONY: demo serve test lint venv docs

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

venv: $(VENV)/.installed

demo: venv
	bash scripts/demo.sh

# The production profile: gunicorn, django-q2 on Redis, PostgreSQL (docs/deployment.md).
serve: venv
	bash scripts/serve.sh

# tests/browser/install.sh: what the browser tests need beyond the venv (Debian's chromium, npm ci for
# axe-core), only when missing. Their screenshots go to artifacts/screenshots/ (docs/testing.md).
test: venv
	bash tests/browser/install.sh
	DATABASE_URL=$(TEST_DATABASE_URL) DEBUG=1 HF_HUB_OFFLINE=1 $(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	DATABASE_URL=$(TEST_DATABASE_URL) DEBUG=1 $(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The documentation site (mkdocs.yml): docs/ built into site/; --strict fails on a broken link or anchor.
docs: venv
	$(VENV)/bin/mkdocs build --strict --site-dir site
