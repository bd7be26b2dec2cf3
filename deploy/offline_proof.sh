#!/usr/bin/env bash
# Prove that an offline bundle installs and serves with no network (issue 12, acceptance).
#
# Why: "installs without a network" is only true if it was tried without one. This script re-runs
# itself in a new user + network namespace (`unshare -rn`) whose only interface is loopback, shows
# that the package index cannot be reached, then unpacks the archive, runs its install.sh, ingests
# the sample manuals, asks one question, serves on 127.0.0.1, checks /api/v1/health and a search,
# and stops the server with SIGTERM. Any failed step exits non-zero; the transcript is the proof.
#
# Usage: deploy/offline_proof.sh ARCHIVE [WORKDIR]
#   ARCHIVE  dist/manualqa-bundle-<version>-<arch>.tar.gz (make bundle)
#   WORKDIR  scratch directory (default: a new one under /tmp); removed afterwards unless KEEP=1
# Needs: util-linux unshare with unprivileged user namespaces, curl, python3 (the bundle's Python).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
archive=$(realpath "${1:?usage: deploy/offline_proof.sh ARCHIVE [WORKDIR]}")

if [ -z "${MANUALQA_PROOF_INNER:-}" ]; then
    work=${2:-$(mktemp -d /tmp/mqa-proof.XXXXXX)}
    mkdir -p "$work"
    status=0
    MANUALQA_PROOF_INNER=1 unshare -rn bash "$0" "$archive" "$work" || status=$?
    [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
    exit "$status"
fi

work=$2
step() { printf '\n== %s\n' "$*"; }
step "network: loopback only"
if command -v ip >/dev/null; then ip -brief link; ip link set lo up; else
    python3 -c 'import socket, fcntl, struct; s = socket.socket(); fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", 1 | 8))'
fi
if python3 -c 'import socket; socket.create_connection(("pypi.org", 443), timeout=5)' 2>/dev/null; then
    echo "pypi.org is reachable: this is not an offline proof" >&2
    exit 1
fi
echo "pypi.org: unreachable (as intended)"

step "unpack $(basename "$archive")"
cd "$work"
t0=$SECONDS
tar xzf "$archive"
bundle=$(find "$work" -maxdepth 1 -type d -name 'manualqa-bundle-*' | head -1)
echo "unpacked in $((SECONDS - t0)) s: $bundle"

step "install (pip --no-index from the wheelhouse)"
t0=$SECONDS
PYTHON=${PYTHON:-python3} bash "$bundle/install.sh" "$work/prefix"
echo "install took $((SECONDS - t0)) s"
mqa=$work/prefix/bin/manualqa
export MANUALQA_DATA=$work/data HF_HUB_OFFLINE=1

step "ingest the sample manuals"
"$mqa" ingest "$root/sample_manuals"

step "ask (extractive: the evidence, no model)"
"$mqa" ask "What input voltage range does the piston board accept?" --extractive

step "serve on 127.0.0.1, /api/v1/health and a search"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
t0=$(date +%s.%N)
"$mqa" serve --host 127.0.0.1 --port "$port" > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do
    curl -fsS "http://127.0.0.1:$port/api/v1/health" > "$work/health.json" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log"; echo "server exited" >&2; exit 1; }
    sleep 0.1
done
python3 -c "import sys; print('health 200 after %.1f s:' % (float(sys.argv[2]) - float(sys.argv[1])))" \
    "$t0" "$(date +%s.%N)"
python3 -c 'import json, sys; h = json.load(open(sys.argv[1])); print(h); sys.exit(h["status"] != "ok")' \
    "$work/health.json"
curl -fsS -X POST "http://127.0.0.1:$port/api/v1/search" -H 'Content-Type: application/json' \
    -d '{"query": "piston board input voltage", "k": 3}' |
    python3 -c 'import json, sys; r = json.load(sys.stdin); [print(" ", h["title"], "p.", h["page"], "|", h["heading"]) for h in r["hits"]]'

step "SIGTERM"
kill -TERM "$server"
wait "$server" && echo "server stopped cleanly" || { echo "server exit status $?" >&2; exit 1; }
tail -2 "$work/serve.log"
step "offline proof passed"
