# jaxguide, on a fresh machine with Python 3.11, pip and make:
#   make unit   start here: the unit tests and doctests of the package and of the tools,
#               without building the book or opening Chromium (about a minute: CONTRIBUTING.md)
#   make book   build the HTML book into _build/html (executes every chapter)
#   make test   the full check (what .ci/run runs): lint and type check (as make lint),
#               every test, a strict build of the whole book, the site in headless Chromium
# Each creates the environment from uv.lock first (in .venv, with uv in .tools).
#   make lint   ruff and mypy

PYTHON ?= python3.11
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PORT ?= 8000

.PHONY: env book test unit lint ruff format serve clean notebooks notebooks-check notebook browser-deps lighthouse-deps

# uv itself, in a folder of its own (pip's --target: no virtual environment to create).
$(UV):
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --target $(TOOLS) "uv==$(UV_VERSION)"

$(VENV)/.synced: uv.lock pyproject.toml | $(UV)
	$(UV) sync --locked --python $(PYTHON)
	touch $@

# The environment's bytecode: every build imports Sphinx and every chapter's kernel
# imports JAX; where PYTHONDONTWRITEBYTECODE is set (CI, some sandboxes) each would
# compile those sources again (bench/reports/build-times-2026-11.md measures it). Only
# what the build and the tests import (tools/compile_env.py says why). A step of its
# own so that make test runs it beside lint.
$(VENV)/.compiled: $(VENV)/.synced tools/compile_env.py
	$(VENV)/bin/python tools/compile_env.py
	touch $@

env: $(VENV)/.compiled

book: env
	$(VENV)/bin/jupyter-book build book/

# ruff, the browser's dependencies and the environment's bytecode run side by side (-j)
# before the tests. The type check (mypy) waits for the session's last part, Lighthouse's
# runs, which leave about one core idle: the session writes _build/.idle-phase when its
# idle tests start, or when it ends (tests/timeline.py); mypy then runs at the lowest
# priority on what they leave, and its report follows pytest's. Either failing fails
# make test.
test: $(VENV)/.synced
	@$(MAKE) --no-print-directory -j4 ruff browser-deps lighthouse-deps $(VENV)/.compiled
	@mkdir -p _build && rm -f _build/mypy.log _build/.idle-phase
	@( while [ ! -e _build/.idle-phase ]; do sleep 1; done; \
	   exec nice -n 19 $(VENV)/bin/mypy > _build/mypy.log 2>&1 ) & typecheck=$$!; \
	$(VENV)/bin/python -m pytest; tests=$$?; \
	touch _build/.idle-phase; wait $$typecheck; typed=$$?; \
	echo "mypy (run beside the tests' last part):"; cat _build/mypy.log; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

# Every test not marked book, builds or browser (pyproject.toml, [tool.pytest.ini_options]);
# a test that uses the built book must carry the book marker (tests/timeline.py).
# pytest-xdist runs the tests on every core, each worker taking more tests as it finishes
# (worksteal: fixed batches left one core idle while the other ran the last slow tests;
# bench/reports/make-test-2026-11.md has the runs). Most of their time is XLA compiling small
# programs, so JAX's persistent compilation cache in _build/.jax_cache_unit keeps them
# from one run to the next (the first run fills it), with the settings the build's
# kernels get (compilation_cache_env in tools/jaxguide_build/jupyter_kernels.py, which
# says why they are what they are). Tests that start several JAX processes run without
# the cache (tests/conftest.py).
unit: env
	@cache_env="$$($(VENV)/bin/python -m jaxguide_build.jupyter_kernels \
		--cache-env $(CURDIR)/_build/.jax_cache_unit)" || exit 1; \
	env $$cache_env $(VENV)/bin/python -m pytest -m "not book and not browser and not builds" -q -n auto --dist worksteal

# ruff (lint and format check) over the Python sources, mypy over the package, the
# build tooling in tools/, bench/ and the tests' infrastructure (pyproject.toml, [tool.mypy]).
lint: ruff
	$(VENV)/bin/mypy

ruff: $(VENV)/.synced
	$(VENV)/bin/ruff check src tests tools bench
	$(VENV)/bin/ruff format --check src tests tools bench

# Apply ruff's formatting and safe fixes.
format: env
	$(VENV)/bin/ruff check --fix src tests tools bench
	$(VENV)/bin/ruff format src tests tools bench

# The browser tests drive Debian's chromium with Playwright (no browser download).
# Set JAXGUIDE_CHROMIUM to use another Chromium or Chrome binary instead.
browser-deps:
	@if [ -n "$$JAXGUIDE_CHROMIUM" ] && [ -x "$$JAXGUIDE_CHROMIUM" ]; then exit 0; fi; \
	if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	echo "Installing Chromium for the browser tests (apt-get install chromium) ..."; \
	SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null \
	  || { echo "Could not install chromium: install it, or set JAXGUIDE_CHROMIUM to a Chromium binary."; exit 1; }

# Lighthouse (npm, locked in package-lock.json) for the browser tests and bench/lighthouse.py;
# it drives the same Chromium as the browser tests and downloads no browser.
lighthouse-deps: node_modules/.package-lock.json

node_modules/.package-lock.json: package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "Lighthouse needs Node.js and npm: install them (e.g. apt-get install nodejs npm)."; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The built site on 127.0.0.1, compressed with gzip as GitHub Pages serves it. The server
# is standard library only, so it runs on $(PYTHON), without the environment.
serve:
	@test -f _build/html/index.html || { echo "No _build/html yet: run 'make book' first."; exit 1; }
	$(PYTHON) tools/jaxguide_serve.py _build/html --port $(PORT)

clean:
	rm -rf _build

# Regenerate notebooks/<chapter>.ipynb (for Colab) from the chapters; commit the result.
notebooks: env
	$(VENV)/bin/python tools/make_notebooks.py

# Every Colab notebook run top to bottom from a wheel in a clean environment, and its
# outputs compared with a strict build's (make test runs a sample: tests/wheelrun.py).
# Several minutes on top of the build.
notebooks-check: env
	JAXGUIDE_WHEEL_RUN=all $(VENV)/bin/python -m pytest -q \
		tests/test_notebooks.py tests/test_reproducible.py

# One chapter's notebook (CHAPTER=<name>: notebooks/<name>.ipynb, regenerated first from
# book/<name>.md, so an edited chapter never runs as its old notebook) run top to bottom as
# the build runs a chapter (tools/jaxguide_build/notebook_runs.py: a fresh kernel over
# IPC sockets), with this checkout's jaxguide and claims strict (a false one stops it),
# in a fresh folder _build/notebook/<name>/; the executed notebook is
# _build/notebook/<name>.ipynb. WHEEL=1 runs it instead as make test does, from a wheel
# in a clean environment (tests/wheelrun.py, JAXGUIDE_WHEEL_RUN=<name>), and compares
# its outputs with your build's (_build/, as JAXGUIDE_TEST_BUILD=. does).
notebook: env
	@test -n "$(CHAPTER)" && test -f notebooks/$(CHAPTER).ipynb || { \
	  echo "usage: make notebook CHAPTER=<name> [WHEEL=1], <name> one of:" \
	    $$(ls notebooks | sed -n 's/\.ipynb$$//p'); exit 1; }
	$(VENV)/bin/python tools/make_notebooks.py $(CHAPTER)
ifeq ($(WHEEL),1)
	JAXGUIDE_WHEEL_RUN=$(CHAPTER) JAXGUIDE_TEST_BUILD=$(CURDIR) $(VENV)/bin/python -m pytest -q \
		tests/test_notebooks.py::test_notebooks_run_from_a_wheel_in_a_clean_environment \
		tests/test_reproducible.py::test_book_and_notebook_executions_have_identical_outputs
else
	@rm -rf _build/notebook/$(CHAPTER) && mkdir -p _build/notebook/$(CHAPTER)
	PYTHONPATH=$(CURDIR)/src JAXGUIDE_STRICT_CLAIMS=1 $(VENV)/bin/python \
		tools/jaxguide_build/notebook_runs.py notebooks/$(CHAPTER).ipynb \
		_build/notebook/$(CHAPTER).ipynb _build/notebook/$(CHAPTER)
endif
