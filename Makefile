# manualqa: `make run` and `make test` are the whole quick start.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
HOST ?= 0.0.0.0
PORT ?= 8080

.PHONY: run test lint install install-dev vendor browser bench bundle clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned to the CPU build first, so that sentence-transformers does not pull a CUDA build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q "torch==2.13.0" || $(BIN)/pip install -q torch
	$(BIN)/pip install -q -e ".[llm,server]"
	touch $@

$(DEVSTAMP): $(STAMP)
	$(BIN)/pip install -q -e ".[llm,server,dev]"
	touch $@

install: vendor $(STAMP)
install-dev: vendor $(DEVSTAMP)

# pdf.js for the page viewer (/viewer): a pinned pdfjs-dist from the npm registry, integrity-checked,
# into ui/static/vendor/pdfjs/ (git-ignored; the wheel and the bundle carry it). Skips when that version
# is there. Without a network it warns and the viewer opens PDFs at #page=N instead: `make run` still works.
vendor:
	@$(PY) ui/vendor_pdfjs.py || echo "warning: continuing without the page viewer's pdf.js (make vendor)"

# Debian's chromium for the browser tests (Playwright drives it; no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
		( (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || \
		  echo "warning: could not install Debian's chromium; browser tests will fail" )

run: install
	$(BIN)/manualqa ingest sample_manuals
	$(BIN)/manualqa serve --host $(HOST) --port $(PORT)

test: install-dev browser
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: install-dev
	$(BIN)/ruff check .

bench: install-dev
	$(BIN)/python -m bench.run_all

# An offline install bundle for this architecture and Python: dist/bundle/ and
# dist/manualqa-bundle-<version>-<arch>.tar.gz (wheelhouse, install.sh, SHA256SUMS). docs/operations.md.
bundle: install
	PY=$(BIN)/python bash deploy/bundle.sh dist

clean:
	rm -rf $(VENV) data .pytest_cache
