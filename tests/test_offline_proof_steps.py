"""deploy/proof_steps.sh, the offline proof's steps after the install, run for real on every `make test`.

Issue 50: the proof's generate step once asked in the default mode (extractive until the profile passes
gate 4), so the bundle's llama.cpp never ran and nothing noticed. Here the steps run with this checkout's
installed `manualqa` (the console script next to sys.executable) on a temporary data directory: a real
ingest of the sample manuals, a real SmolLM2 answer through llama.cpp, a real server. Then the same script
with doctored `manualqa` executables, which must make it fail: one that drops `--mode generate` (the drift
itself), one that dies of SIGSEGV while generating, and stand-in servers whose health, search or stop is
wrong. The network namespace and install.sh are not run here: tests/test_bundle.py covers install.sh and
bundle.sh; the namespace is the proof's own, run by hand (docs/operations.md, "Air-gapped install").
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import REPO_ROOT

# the real run: about 75 s on the 2-core build box under load; the limits leave room for a busier one
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

STEPS = REPO_ROOT / "deploy" / "proof_steps.sh"
MANUALQA = Path(sys.executable).parent / "manualqa"
HEADERS = (
    "== ingest the sample manuals",
    "== ask (extractive: the evidence, no model)",
    "== ask (generate: the default model on the bundle's llama.cpp)",
    "== serve on 127.0.0.1, /api/v1/health and a search",
    "== SIGTERM",
)
RUN_TIMEOUT_S = 1500  # the steps take 1-3 minutes; a box busy with other work must not fail them by its speed


class Run(NamedTuple):
    returncode: int
    transcript: str  # stdout and stderr, in order


class Proof(NamedTuple):
    run: Run
    data: Path


def run_steps(manualqa: Path, data: Path, scratch: Path, extra_env: dict[str, str] | None = None) -> Run:
    """bash deploy/proof_steps.sh MANUALQA ROOT SCRATCH with MANUALQA_DATA=data, no inherited MANUALQA_* setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANUALQA_")}
    env.update(MANUALQA_DATA=str(data), PYTHON=sys.executable, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", PROOF_WAIT_S="600", **(extra_env or {}))
    scratch.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(["bash", str(STEPS), str(manualqa), str(REPO_ROOT), str(scratch)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the server and the model's worker too
        out, _ = proc.communicate()
        pytest.fail(f"proof_steps.sh still running after {RUN_TIMEOUT_S} s:\n{out}")
    return Run(proc.returncode, out)


def section(transcript: str, header: str) -> str:
    """The transcript from a step's header to the next header."""
    rest = transcript.split(header + "\n", 1)[1]
    return rest.split("\n== ", 1)[0]


@pytest.fixture(scope="module")
def proof(tmp_path_factory: pytest.TempPathFactory) -> Proof:
    """The steps, once, with the real manualqa; the other tests reuse its ingested data directory."""
    if not MANUALQA.is_file():
        pytest.fail(f"no manualqa console script next to {sys.executable} (make install-dev)")
    work = tmp_path_factory.mktemp("proof")
    return Proof(run_steps(MANUALQA, work / "data", work / "scratch"), work / "data")


def test_the_steps_run_for_real(proof: Proof) -> None:
    out = proof.run.transcript
    assert proof.run.returncode == 0, out
    positions = [out.find(h + "\n") for h in HEADERS]
    assert -1 not in positions and positions == sorted(positions), out
    ingest = section(out, HEADERS[0])
    assert "noaa_lcp_pistonboard_user_manual.pdf" in ingest and "new active version" in ingest, out
    assert " · extractive · " in section(out, HEADERS[1]), out
    # the model wrote this answer: no extractive mode, no extractive fallback
    generated = section(out, HEADERS[2])
    status_line = next(line for line in generated.splitlines() if " · answer " in line)
    assert " · generate · " in status_line, out
    assert "chain -" not in status_line, out  # an artifact chain: a model ran
    serve = section(out, HEADERS[3]).splitlines()
    after = next(i for i, line in enumerate(serve) if line.startswith("health 200 after"))
    health = ast.literal_eval(serve[after + 1])
    assert health["status"] == "ok", out
    hits = [line for line in serve if line.startswith("  ") and " p. " in line]
    assert hits and any("Piston-board" in h for h in hits), out
    assert "server stopped cleanly" in section(out, HEADERS[4]), out


def wrapper(tmp_path: Path, body: str) -> Path:
    """A `manualqa` that runs `body` (bash) with REAL set to the real one."""
    path = tmp_path / "manualqa"
    path.write_text(f"#!/usr/bin/env bash\nREAL={MANUALQA}\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def copy_data(proof: Proof, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(proof.data, data)  # the ingest finds it unchanged: no second index build
    return data


def test_an_answer_the_model_did_not_write_fails_the_proof(proof: Proof, tmp_path: Path) -> None:
    """The issue 50 drift: `manualqa ask` without --mode generate answers extractively under answer.mode auto."""
    drops_mode = wrapper(tmp_path, """args=()
while [ $# -gt 0 ]; do
    if [ "$1" = --mode ] && [ "${2:-}" = generate ]; then shift 2; continue; fi
    args+=("$1"); shift
done
exec "$REAL" "${args[@]}\"""")
    run = run_steps(drops_mode, copy_data(proof, tmp_path), tmp_path / "scratch")
    assert run.returncode != 0, run.transcript
    assert run.transcript.rstrip().endswith("the answer was not generated by the model"), run.transcript
    generated = section(run.transcript, HEADERS[2])
    assert " · extractive · " in generated and " · generate · " not in generated, run.transcript
    assert HEADERS[3] not in run.transcript, run.transcript


def test_a_crash_while_generating_fails_the_proof(proof: Proof, tmp_path: Path) -> None:
    """A llama.cpp build for another CPU dies in the generate step (SIGILL; issue 22: SIGSEGV)."""
    crashes = wrapper(tmp_path, """for a in "$@"; do [ "$a" = generate ] && kill -SEGV $$; done
exec "$REAL" "$@\"""")
    run = run_steps(crashes, copy_data(proof, tmp_path), tmp_path / "scratch")
    assert run.returncode != 0, run.transcript
    assert "manualqa ask died of signal 11 (SIGSEGV)" in run.transcript, run.transcript
    assert run.transcript.rstrip().endswith("manualqa ask (generate) failed with exit status 139"), run.transcript
    assert HEADERS[3] not in run.transcript, run.transcript


# A stand-in `manualqa` for the server steps: ingest and ask succeed at once (the ask claims a generated
# answer), serve is a small HTTP server with the health, hits and exit status on SIGTERM that FAKE_SERVE says.
FAKE_MANUALQA = '''\
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

command = sys.argv[1]
if command == "ask":
    mode = "generate" if "generate" in sys.argv else "extractive"
    print("an answer [1]")
    print(f"answered · {mode} · answer X · index v1 · chain c0ffee", file=sys.stderr)
    sys.exit(0)
if command == "index":  # index show --json: the manifest FAKE_INDEX says
    print(os.environ.get("FAKE_INDEX", "{}"))
    sys.exit(0)
if command != "serve":
    print(command, "done")
    sys.exit(0)
status, hits, exit_code = os.environ["FAKE_SERVE"].split(",")
if exit_code == "now":
    sys.exit(2)
with open(os.environ["FAKE_PID"], "w") as fh:
    fh.write(str(os.getpid()))
hit = {"title": "Manual", "page": 1, "heading": "Power"}
replies = {"/api/v1/health": {"status": status}, "/api/v1/search": {"hits": [hit] * int(hits)}}


class Handler(BaseHTTPRequestHandler):
    def reply(self):
        body = json.dumps(replies[self.path]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply()

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.reply()


signal.signal(signal.SIGTERM, lambda *_: os._exit(int(exit_code)))
HTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), Handler).serve_forever()
'''


@pytest.mark.parametrize(("serve", "message"), [
    ("degraded,3,0", "/api/v1/health is not ok"),
    ("ok,0,0", "the search returned no hits"),
    ("ok,3,3", "server exit status 3 after SIGTERM"),
    ("ok,3,now", "the server exited (status 2) before /api/v1/health answered"),
])
def test_a_wrong_server_fails_the_proof(tmp_path: Path, serve: str, message: str) -> None:
    fake = tmp_path / "manualqa"
    fake.write_text(f"#!{sys.executable}\n{FAKE_MANUALQA}", encoding="utf-8")
    fake.chmod(0o755)
    pid_file = tmp_path / "server.pid"
    run = run_steps(fake, tmp_path / "data", tmp_path / "scratch",
                    {"FAKE_SERVE": serve, "FAKE_PID": str(pid_file)})
    assert run.returncode != 0, run.transcript
    assert run.transcript.rstrip().endswith(message), run.transcript
    assert "server stopped cleanly" not in run.transcript
    if pid_file.exists():  # a failed step leaves no server running
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)


def test_the_offline_proof_runs_these_steps() -> None:
    """offline_proof.sh hands its installed manualqa to proof_steps.sh (and keeps no copy of the steps)."""
    text = (REPO_ROOT / "deploy" / "offline_proof.sh").read_text(encoding="utf-8")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert 'bash "$root/deploy/proof_steps.sh" "$work/prefix/bin/manualqa" "$root" "$work"' in code
    assert '" ask ' not in code and '" serve ' not in code and '" ingest ' not in code


@pytest.mark.parametrize(("index", "setting", "failure"), [
    ('{"companion": {"model_id": "intfloat/multilingual-e5-small"}}', "", None),
    ('{"companion": null}', "", "the bundle carries multilingual-e5, but the index was built without it"),
    ('{"companion": null}', "off", None),  # turned off on purpose: not checked
])
def test_a_bundle_with_e5_must_be_searched_with_it(
    tmp_path: Path, index: str, setting: str, failure: str | None
) -> None:
    """install.sh put the bundle's e5 beside the venv (PREFIX/share/manualqa/embedders/): the index the proof's
    ingest wrote must record it as the companion (issue 47: the air-gapped gateway searches Chinese by meaning)."""
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share" / "manualqa" / "embedders" / "multilingual-e5-small-int8").mkdir(parents=True)
    fake = prefix / "bin" / "manualqa"
    fake.write_text(f"#!{sys.executable}\n{FAKE_MANUALQA}", encoding="utf-8")
    fake.chmod(0o755)
    env = {"FAKE_SERVE": "ok,3,0", "FAKE_PID": str(tmp_path / "server.pid"), "FAKE_INDEX": index}
    if setting:
        env["MANUALQA_EMBEDDING__COMPANION"] = setting
    run = run_steps(fake, tmp_path / "data", tmp_path / "scratch", env)
    checked = "== the bundle's multilingual companion embedded the manuals" in run.transcript
    assert checked == (setting != "off"), run.transcript
    if failure is None:
        assert run.returncode == 0 and "server stopped cleanly" in run.transcript, run.transcript
    else:
        assert run.returncode != 0 and run.transcript.rstrip().endswith(failure), run.transcript
        assert HEADERS[1] not in run.transcript, run.transcript  # nothing asked of an index without it
