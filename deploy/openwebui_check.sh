#!/usr/bin/env bash
# Rerun the Open WebUI check (issue 48): Open WebUI, at its defaults, against a real gateway, in chromium.
#
# Why: docs/api.md says Open WebUI works with its defaults (streaming on, its built-in tools attached,
# title / tags / follow-up generation on). That claim is only as good as its last try, and Open WebUI's
# install (several GB: torch, transformers, chromadb, ...) stays out of `make test`; this script is
# the try, on demand.
#
# What it does:
#   1. makes Open WebUI's own venv once ($OWUI_VENV, default /opt/openwebui-venv, outside the repository)
#      and installs open-webui==$OWUI_VERSION from PyPI into it (a CPU-only torch wheel found in
#      pip's find-links directory is installed first, so pip does not pull CUDA's libraries);
#   2. deploy/openwebui_check.py, with this repository's venv (playwright): ingests sample_manuals into
#      a temporary data directory, creates a reader key, serves the gateway on a free port, starts
#      Open WebUI offline on another (OFFLINE_MODE, ENABLE_OLLAMA_API=false, OPENAI_API_BASE_URL =
#      the gateway's /v1 through a recording proxy, OPENAI_API_KEY = the reader key, a temporary
#      DATA_DIR), signs up its first admin in chromium, picks `manualqa`, asks one question, checks the
#      streamed reply (answer + "Sources:" with a page) and that the answer log holds exactly one
#      searched question; prints PASS / FAIL lines and what the gateway answered to each request.
#
# Usage: deploy/openwebui_check.sh [RESULTS_DIR]
#   RESULTS_DIR  screenshot, reply, requests.jsonl, answer log, both servers' logs
#                (default: $OWUI_RESULTS or /tmp/openwebui-check)
# Environment: OWUI_VENV, OWUI_VERSION (default 0.12.4: the version this was last checked with),
#   OWUI_PYTHON (default python3.11; Open WebUI needs 3.11 or 3.12), CHROMIUM (default /usr/bin/chromium),
#   OWUI_START_TIMEOUT (seconds Open WebUI may take to start, default 900),
#   OWUI_GATEWAY: `head` (default: the gateway's code as committed, exported to a temporary directory,
#   so that uncommitted edits in this checkout do not decide the result) or `worktree` (this checkout as it is).
# Needs: `make install-dev` done (the repository's .venv with playwright), chromium, PyPI reachable
# on the first run only. Exit status: 0 when every check passed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${OWUI_VENV:-/opt/openwebui-venv}
version=${OWUI_VERSION:-0.12.4}
python=${OWUI_PYTHON:-python3.11}
results=${1:-${OWUI_RESULTS:-/tmp/openwebui-check}}
chromium=${CHROMIUM:-/usr/bin/chromium}

[ -x "$root/.venv/bin/python" ] || { echo "FAIL no $root/.venv: run make install-dev first" >&2; exit 1; }
[ -x "$chromium" ] || { echo "FAIL no chromium at $chromium (apt-get install chromium)" >&2; exit 1; }

installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("open-webui"))' 2>/dev/null || true)
if [ "$installed" != "$version" ]; then
    echo "== installing open-webui==$version into $venv (several GB; once)"
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    find_links=$("$venv/bin/pip" config get global.find-links 2>/dev/null || true)
    torch_cpu=$(ls "${find_links:-/nonexistent}"/torch-*+cpu-*.whl 2>/dev/null | head -1 || true)
    if [ -n "$torch_cpu" ] && ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
        nice -n 10 "$venv/bin/pip" install -q "$torch_cpu"
    fi
    nice -n 10 "$venv/bin/pip" install -q "open-webui==$version"
fi
echo "open-webui $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("open-webui"))') in $venv"

mkdir -p "$results"
pidfile=$(mktemp /tmp/owui-check-pids.XXXXXX)
tree=$root
revision="working tree at $(git -C "$root" rev-parse --short=12 HEAD) (uncommitted edits included)"
if [ "${OWUI_GATEWAY:-head}" = head ]; then
    tree=$(mktemp -d /tmp/owui-check-tree.XXXXXX)
    git -C "$root" archive HEAD | tar -x -C "$tree"
    # ignored, built by make: the pdf viewer's vendored files
    [ ! -d "$root/ui/static/vendor" ] || ln -s "$root/ui/static/vendor" "$tree/ui/static/vendor"
    revision="commit $(git -C "$root" rev-parse --short=12 HEAD)"
fi
# The driver stops both servers itself; this trap is for a driver that was killed outright.
cleanup() {
    while read -r pid; do
        [ -n "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null || true
    done < "$pidfile"
    rm -f "$pidfile"
    [ "$tree" = "$root" ] || rm -rf "$tree"
}
trap cleanup EXIT INT TERM

cd "$root"
OWUI_PIDFILE=$pidfile "$root/.venv/bin/python" "$root/deploy/openwebui_check.py" \
    --open-webui "$venv/bin/open-webui" --results "$results" --chromium "$chromium" \
    --start-timeout "${OWUI_START_TIMEOUT:-900}" --tree "$tree" --revision "$revision"
