# contextstore: `make run` serves on the embedded default, `make test` runs the whole suite,
# `make check` is the everyday loop (lint, types and the fast tier of the tests).
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
UV_VERSION := 0.13.8
# Python's bytecode cache stays on for everything make runs, whatever the shell says: without
# it every process (pytest, its workers and servers, the frameworks' suites) compiles Django
# and the rest from source, and pytest rewrites every test module again (collecting tests/api
# took 20 s of CPU instead of 9).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test check lint typecheck bench venv migrate demo clean framework-venvs screenshots client-matrix

# uv installs the pinned dependencies in a fraction of pip's time; it is itself a pinned
# package from PyPI, installed into the virtualenv with the interpreter's own pip. The client
# (clients/python, the contextstore-client distribution agents install) goes in beside the
# server, editable, with its token-counting extra. It compiles the bytecode as it installs (on both
# cores), so the first `make check` does not compile Django and the rest in every process.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	@PY="$$(scripts/find-python)" || exit 1; \
	if [ ! -x $(BIN)/python ]; then echo "creating $(VENV) with $$PY"; "$$PY" -m venv $(VENV); fi
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev,adapters]' -e './clients/python[tiktoken]'
	@touch $(STAMP)

# The tests that install clients/python into bare virtualenvs do it offline, at this venv's
# versions, from uv's cache: scripts/distribution-cache makes sure the cache in use holds them
# (a no-op while its stamp holds; a fresh cache, as in .ci/run, is filled once).
venv: $(STAMP)
	@$(BIN)/python scripts/distribution-cache

migrate: venv
	@mkdir -p var
	$(BIN)/python manage.py migrate --noinput

demo: migrate
	$(BIN)/python manage.py seed_demo --if-empty

run: demo
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

# The frameworks' suites run in their own virtualenvs (.venv-langgraph, .venv-openai-agents, .venv-adk),
# built side by side from PyPI and reused while their pins hold (tests/frameworks/ runs them
# against a live test server).
framework-venvs: venv
	@pids=(); for name in langgraph openai-agents adk; do \
	    scripts/framework-venv $$name & pids+=($$!); done; \
	status=0; for pid in "$${pids[@]}"; do wait $$pid || status=1; done; exit $$status

# axe-core checks every dashboard page for accessibility in the browser tests (tests/browser/);
# a pinned npm package in node_modules (gitignored), injected by Playwright. Without npm (a
# machine with only Python) those checks skip, as the browser tests do without chromium.
AXE := node_modules/axe-core/axe.min.js
$(AXE):
	@if command -v npm >/dev/null 2>&1; then \
		npm install --no-save --no-audit --no-fund axe-core@4.14.1; \
	else echo "npm not found: the browser tests' accessibility checks will skip"; fi

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports

typecheck: venv
	$(BIN)/mypy

# The fast tier: no browser, worker, framework suite or slow test (tests/conftest.py applies
# those marks by folder and fixture). Hypothesis draws its small `dev` profile unless CI is set.
# The tests run on every CPU (pytest-xdist -n logical: one test database per worker, test_<name>_gw0;
# TEST_WORKERS=0 runs them in one process) while mypy checks beside them (its cache stays in
# .mypy_cache; its report is printed when the tests end), so the loop takes about as long as the
# tests alone. The import contracts are one of those tests (tests/test_layers.py runs lint-imports
# beside the others, not before them), and schemathesis' pytest plugin, 2 s of CPU in each
# process, is left unloaded: the schema fuzzers are not in this tier.
FAST := not (browser or worker or framework or slow)
TEST_WORKERS ?= logical
check: venv
	@mkdir -p var
	$(BIN)/ruff check .
	@$(BIN)/mypy > var/mypy.out 2>&1 & mypy=$$!; \
	$(BIN)/python -m pytest -q -p no:schemathesis -n $(TEST_WORKERS) --dist loadgroup -m "$(FAST)" $(PYTEST_ARGS); tests=$$?; \
	wait $$mypy; types=$$?; echo "mypy:"; cat var/mypy.out; exit $$(( tests || types ))

# Two workers share this kind of 2-core machine with the servers, Celery workers and browsers the
# tests start, so a test with a deadline can miss it only because the other worker was busy: the
# tests that failed in the parallel run run once more, alone, and only a failure there fails (the
# log lists them under its own heading, so a test that needs it is seen).
test: venv framework-venvs $(AXE)
	@mkdir -p var
	$(BIN)/lint-imports
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS) || { \
	    echo "== the tests that failed beside another worker, once more alone (a failure here fails) =="; \
	    $(BIN)/python -m pytest -n 0 --last-failed --last-failed-no-failures none $(PYTEST_ARGS); }

# The light client's own tests (clients/python/tests, no server) on Python 3.10 to 3.13, each in a
# throw-away virtualenv built by uv; a version not found is skipped, unless CLIENT_MATRIX_REQUIRE
# names it (CI: "3.11 3.12 3.13"). See scripts/client-matrix.
client-matrix: venv
	scripts/client-matrix

bench: migrate
	$(BIN)/python manage.py bench_core

# README's screenshots (docs/img/), taken again on a throwaway database with Debian's chromium.
screenshots: venv
	$(BIN)/python scripts/screenshots

clean:
	rm -rf $(VENV) var .venv-langgraph .venv-openai-agents .venv-adk
