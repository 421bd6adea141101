# contextstore: `make run` serves on the embedded default, `make test` runs the whole suite.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint bench venv migrate demo clean framework-venvs

$(STAMP): pyproject.toml
	@PY="$$(scripts/find-python)" || exit 1; \
	if [ ! -x $(BIN)/python ]; then echo "creating $(VENV) with $$PY"; "$$PY" -m venv $(VENV); fi
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,adapters]'
	@touch $(STAMP)

venv: $(STAMP)

migrate: venv
	@mkdir -p var
	$(BIN)/python manage.py migrate --noinput

demo: migrate
	$(BIN)/python manage.py seed_demo --if-empty

run: demo
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

# The frameworks' suites run in their own virtualenvs (.venv-langgraph, .venv-openai-agents, .venv-adk),
# built once from PyPI and reused (tests/frameworks/ runs them against a live test server).
framework-venvs:
	scripts/framework-venv langgraph
	scripts/framework-venv openai-agents
	scripts/framework-venv adk

# axe-core checks every dashboard page for accessibility in the browser tests (tests/browser/);
# a pinned npm package in node_modules (gitignored), injected by Playwright. Without npm (a
# machine with only Python) those checks skip, as the browser tests do without chromium.
AXE := node_modules/axe-core/axe.min.js
$(AXE):
	@if command -v npm >/dev/null 2>&1; then \
		npm install --no-save --no-audit --no-fund axe-core@4.14.1; \
	else echo "npm not found: the browser tests' accessibility checks will skip"; fi

test: venv framework-venvs $(AXE)
	@mkdir -p var
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports

bench: migrate
	$(BIN)/python manage.py bench_core

clean:
	rm -rf $(VENV) var .venv-langgraph .venv-openai-agents .venv-adk
