# jaxguide: two commands on a fresh machine with Python 3.11, pip and make.
#   make book   build the HTML book into _build/html (executes every chapter)
#   make test   run the test suite: unit tests + a strict build of the whole book
# Both create the environment from uv.lock first (in .venv, with uv in .tools).

PYTHON ?= python3.11
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PORT ?= 8000

.PHONY: env book test serve clean notebooks

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.synced: uv.lock pyproject.toml | $(UV)
	$(UV) sync --locked --python $(PYTHON)
	touch $@

env: $(VENV)/.synced

book: env
	$(VENV)/bin/jupyter-book build book/

test: env
	$(VENV)/bin/python -m pytest

serve:
	@test -f _build/html/index.html || { echo "No _build/html yet: run 'make book' first."; exit 1; }
	$(PYTHON) -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

clean:
	rm -rf _build

# Regenerate notebooks/<chapter>.ipynb (for Colab) from the chapters; commit the result.
notebooks: env
	$(VENV)/bin/python tools/make_notebooks.py
