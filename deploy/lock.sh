#!/usr/bin/env bash
# Regenerate the locks (issue 22): requirements.lock (manualqa[llm,server], what `make run` and
# `make bundle` install) and requirements-dev.lock (the same pins plus the [dev], [st], [genai] and
# [genai-convert] extras, what `make test` installs). `make lock` runs this; commit both files with the pyproject.toml change that needed them.
#
# Why: pyproject.toml gives ranges; a fresh machine resolving them next month gets other versions than
# CI tested. The locks pin every package with the sha256 of every file PyPI has for that version, for
# Python 3.10-3.14 on any platform (uv's universal resolution), so `pip install --require-hashes
# --no-deps -r requirements.lock` installs the set that was tested, from any mirror, or fails.
#
# torch is needed only by the [st] extra (sentence-transformers: index versions built with such a model,
# train/), so only the dev lock's set depends on it; the runtime lock holds nothing of it. Even there torch
# itself (and what only its CUDA build needs: nvidia-*, cuda-*, triton) is NOT in the lock: PyPI's torch for
# linux x86_64 is the multi-GB CUDA build; `make install-dev` installs the CPU build first from its own pin
# ($TORCH, default torch==2.13.0, found through pip's find-links / the PyTorch CPU index). The dev lock is
# resolved against that same torch version, so torch's own dependencies (sympy, networkx, ...) are locked.
#
# Versions already in the locks are kept where they still satisfy pyproject.toml (uv reads an existing
# output file as its preferences), so a change to one dependency moves only what it must; UPGRADE=1
# resolves every package anew.
# llama-cpp-python is in the locks as its sdist's hash: the Makefile builds the wheel from that verified
# sdist with stated CPU flags and installs the wheel apart (Makefile, LLAMA_BUILD).
#
# No index URL, find-links or local path goes into the files: they name versions and hashes only,
# resolved against PyPI. tests/test_lock.py fails when pyproject.toml and the locks drift: the header's
# pyproject-sha256 is a hash of pyproject's dependency lists, and every requirement must be pinned.
#
# Usage: deploy/lock.sh      (from the repository root; needs uv and a network)
# Environment: TORCH (default torch==2.13.0), PY (a Python >= 3.11, or one with tomli; default python3),
#   UPGRADE=1 (newest versions of everything, instead of keeping the locked ones)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
torch=${TORCH:-torch==2.13.0}
py=${PY:-python3}
index=https://pypi.org/simple
command -v uv >/dev/null || { echo "lock.sh: needs uv (https://docs.astral.sh/uv/, pip install uv)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$torch" >"$tmp/torch.txt"

compile() {  # compile OUT [uv options...]: resolved for Python 3.10 and up, every platform, against PyPI only
    local out=$1
    shift
    uv --no-config pip compile pyproject.toml --universal --python-version 3.10 --default-index "$index" \
        --no-emit-index-url --no-emit-find-links --custom-compile-command "make lock" --quiet \
        -c "$tmp/torch.txt" -o "$out" "$@"
}

# 1. Which packages only the CUDA build of torch pulls in (their names change between torch releases).
compile "$tmp/probe.txt" --extra llm --extra server --extra dev --extra st --extra genai --extra genai-convert --extra multilingual
cuda=$(grep -oE '^(nvidia-[a-z0-9-]+|cuda-[a-z0-9-]+|triton)==' "$tmp/probe.txt" | sed 's/==$//' | sort -u)
skip=(--no-emit-package torch)
for name in $cuda; do skip+=(--no-emit-package "$name"); done

# The hash of pyproject's dependency lists that tests/test_lock.py recomputes.
pyhash=$("$py" - <<'EOF'
import hashlib, json, sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
keys = ("requires-python", "dependencies", "optional-dependencies")
canon = json.dumps({k: project.get(k) for k in keys}, sort_keys=True, separators=(",", ":"))
print(hashlib.sha256(canon.encode()).hexdigest())
EOF
)

header() {  # header WHAT LOCK TORCH-LINES
    cat <<EOF
# $1
# Regenerate with \`make lock\` (deploy/lock.sh: uv pip compile --universal --generate-hashes against PyPI)
# after any change to pyproject.toml's dependencies; tests/test_lock.py fails until you do.
# Install: pip install --require-hashes --no-deps -r $2 (the Makefile does, without llama-cpp-python,
# whose wheel it builds from this file's sdist hash with stated CPU flags).
$3
# pyproject-sha256: $pyhash
# generator: $(uv --version)
EOF
}

# 2. The runtime lock, then the dev lock constrained to it (so both pin the same runtime versions). Each
#    starts from the lock it replaces (uv keeps those versions where they still fit), unless UPGRADE=1.
if [ "${UPGRADE:-0}" != 1 ]; then
    [ ! -f requirements.lock ] || cp requirements.lock "$tmp/runtime.txt"
    [ ! -f requirements-dev.lock ] || cp requirements-dev.lock "$tmp/dev.txt"
fi
compile "$tmp/runtime.txt" --extra llm --extra server --generate-hashes "${skip[@]}"
{ header "manualqa[llm,server]: every package that \`make run\` and \`make bundle\` install." requirements.lock \
    "# No torch: nothing here needs it (only the [st] extra does: sentence-transformers, in requirements-dev.lock)."
  cat "$tmp/runtime.txt"; } >requirements.lock
compile "$tmp/dev.txt" --extra llm --extra server --extra dev --extra st --extra genai --extra genai-convert --extra multilingual \
    --generate-hashes "${skip[@]}" \
    -c requirements.lock
{ header "manualqa[llm,server,dev,st,genai,genai-convert]: requirements.lock's pins plus the dev tools, sentence-transformers and ONNX Runtime GenAI (backend and conversion tools) \`make test\` installs." \
    requirements-dev.lock \
    "# Not in this file: torch and the CUDA-only packages (nvidia-*, cuda-*, triton). The Makefile installs the
# CPU build of torch first, from its own pin; this file was resolved against that version.
# torch: $torch"
  cat "$tmp/dev.txt"; } >requirements-dev.lock

# 3. Nothing of this machine in them: no index or mirror URL, no local path.
if grep -nE -- '--(extra-)?index-url|--find-links|file://|/tmp/|/opt/|/root/|/home/|/work/' requirements.lock requirements-dev.lock; then
    echo "lock.sh: the lines above name an index or a local path; a lock must not" >&2
    exit 1
fi
echo "requirements.lock:     $(grep -cE '^[a-z0-9]' requirements.lock) pins"
echo "requirements-dev.lock: $(grep -cE '^[a-z0-9]' requirements-dev.lock) pins"
echo "left out (torch and its CUDA build): torch $(echo "$cuda" | tr '\n' ' ')"
