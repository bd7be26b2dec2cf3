"""A real server whose generation backend crashes: the gateway stays up and nothing is lost (issue 22).

The profile's backend is tests.support.crashing:CrashingRuntime, declared native, so the gateway
runs it in a supervised worker as it runs llama.cpp; the word CRASH-SEGV / CRASH-ABORT in a
question makes the worker die mid-answer with that signal, and the test also SIGKILLs it from
outside. On the main branch before the worker existed the first such question killed the server.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from runtimes.worker_protocol import cpu_seconds
from tests.support.http import bearer
from tests.support.server import GatewayServer

pytestmark = pytest.mark.slow

QUESTION = "What input voltage range does the piston board accept?"
PROFILE = """
name = "crashing-test"
description = "test double: a native-declared scripted runtime that crashes on request (tests only)"
target_device = "test"
backend = "tests.support.crashing:CrashingRuntime"
rollback = ""
[artifact]
path = "scripted"
sha256 = ""
[options]
script = "The piston board accepts 7 to 36 V [1]."
token_delay_s = {delay}
prefill_s = 300
[generation]
max_tokens = 64
[owners]
conversion = "tests"
integration = "tests"
"""


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("crash"), profile=PROFILE.format(delay=0.15))
    srv.start()
    srv.key = srv.admin_key()  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def ask(srv: GatewayServer, question: str) -> dict:
    r = httpx.post(srv.url + "/api/v1/ask", json={"question": question}, headers=bearer(srv.key), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def runtime_of(srv: GatewayServer) -> dict:
    r = httpx.get(srv.url + "/api/v1/deployment", headers=bearer(srv.key), timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["runtime"]


def wait_state(srv: GatewayServer, state: str, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        rt = runtime_of(srv)
        if rt["state"] == state:
            return rt
        assert time.monotonic() < deadline, rt
        time.sleep(0.1)


def ask_and_kill_mid_answer(srv: GatewayServer, question: str, pid: int) -> dict:
    """Stream the answer; SIGKILL the worker once its first words came (it stalls after two, so the kill
    always lands mid-answer, however busy the box); the final event's answer."""
    final: dict = {}
    with httpx.stream("POST", srv.url + "/api/v1/ask", json={"question": question, "stream": True},
                      headers=bearer(srv.key), timeout=60) as r:
        assert r.status_code == 200
        event = ""
        for line in r.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event == "token" and pid:
                os.kill(pid, signal.SIGKILL)
                pid = 0
            elif line.startswith("data:") and event == "final":
                final = json.loads(line[5:])
    assert final, "no final event"
    return final


def logged(srv: GatewayServer, answer_id: str) -> dict:
    out = srv.cli("log", "show", answer_id, "--json").stdout
    return json.loads(out)


def test_crashes_end_one_answer_each_and_the_gateway_serves_on(server: GatewayServer) -> None:
    srv = server
    ok = ask(srv, QUESTION)
    assert ok["error"] is None and ok["draft"].startswith("The piston board"), ok  # the model answered
    first_pid = wait_state(srv, "ready")["worker"]["pid"]
    assert first_pid and first_pid != srv.proc.pid  # generation runs in its own process

    # 1. a segfault mid-answer: error with the reason, the evidence still shown, the row logged
    crashed = ask(srv, QUESTION + " CRASH-SEGV")
    assert crashed["outcome"] == "error" and "generation backend crashed: SIGSEGV" in crashed["error"], crashed
    assert crashed["citations"] and crashed["answer"], "the evidence must still be shown"
    assert "backend_crashed" in crashed["flags"]
    row = logged(srv, crashed["id"])
    assert row["outcome"] == "error" and "SIGSEGV" in row["error"]
    assert srv.alive()
    health = httpx.get(srv.url + "/api/v1/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok", health.text
    search = httpx.post(srv.url + "/api/v1/search", json={"query": QUESTION}, headers=bearer(srv.key), timeout=30)
    assert search.status_code == 200 and search.json()["hits"], search.text

    # 2. the next question is answered by the restarted worker
    again = ask(srv, QUESTION)
    assert again["error"] is None and again["draft"].startswith("The piston board"), again
    second_pid = wait_state(srv, "ready")["worker"]["pid"]
    assert second_pid not in (None, first_pid)

    # 3. SIGKILL from outside (an OOM kill) while it streams
    killed = ask_and_kill_mid_answer(srv, QUESTION + " CRASH-STALL", second_pid)
    assert killed["outcome"] == "error" and "SIGKILL" in killed["error"], killed
    assert srv.alive()

    # 4. a third death within the window: degraded, answers extractive until an admin acts
    wait_state(srv, "ready")
    aborted = ask(srv, QUESTION + " CRASH-ABORT")
    assert aborted["outcome"] == "error" and "SIGABRT" in aborted["error"], aborted
    health = httpx.get(srv.url + "/api/v1/health", timeout=10).json()
    assert health["status"] == "degraded" and "3 crashes" in health["warning"], health
    assert runtime_of(srv)["state"] == "failed"
    meanwhile = ask(srv, QUESTION)
    assert meanwhile["outcome"] == "evidence_only" and meanwhile["mode"] == "extractive_fallback", meanwhile
    assert "runtime_failed" in meanwhile["flags"] and not meanwhile["draft"]

    # 5. the admin reloads: a fresh worker answers again
    r = httpx.post(srv.url + "/api/v1/deployment/reload", headers=bearer(srv.key), timeout=60)
    assert r.status_code == 200 and r.json()["status"] == "reloaded", r.text
    assert httpx.get(srv.url + "/api/v1/health", timeout=10).json()["status"] == "ok"
    back = ask(srv, QUESTION)
    assert back["error"] is None and back["draft"].startswith("The piston board"), back

    # nothing was lost: every question has its row, with its outcome
    rows = json.loads(srv.cli("log", "--json", "--limit", "50").stdout)
    by_id = {r["id"]: r for r in rows}
    for answer in (ok, crashed, again, killed, aborted, meanwhile, back):
        assert by_id[answer["id"]]["outcome"] == answer["outcome"]


def test_a_client_that_leaves_mid_prompt_frees_the_model_for_the_next_question(server: GatewayServer) -> None:
    """The worker is reading a long prompt (300 s, ignoring cancel, as llama.cpp does) when the client
    goes away: the computation ends within seconds and the next question does not queue behind it."""
    srv = server
    pid = wait_state(srv, "ready")["worker"]["pid"]
    with httpx.stream("POST", srv.url + "/api/v1/ask", json={"question": QUESTION + " CRASH-PREFILL", "stream": True},
                      headers=bearer(srv.key), timeout=60) as r:
        assert r.status_code == 200
        lines = r.iter_lines()  # next() on it, not a for/break: closing the iterator closes the response
        while not next(lines).startswith("event: evidence"):
            pass  # the evidence is out; the model gets the prompt next
        start = cpu_seconds(pid) or 0.0
        deadline = time.monotonic() + 60
        while (cpu_seconds(pid) or 0.0) - start < 0.3:  # leave only once the worker is busy with it
            assert time.monotonic() < deadline, "the worker never started on the prompt"
            time.sleep(0.05)
    t0 = time.monotonic()
    nxt = ask(srv, QUESTION)
    took = time.monotonic() - t0
    assert nxt["error"] is None and nxt["draft"].startswith("The piston board"), nxt
    # the prompt would take 300 s: 60 s (the ask's own timeout) leaves a busy box all the time it needs
    assert took < 60, f"the next question waited {took:.1f} s behind an abandoned prompt"
    assert runtime_of(srv)["worker"]["pid"] != pid  # the busy worker was ended, not waited for
    assert not any("CRASH-PREFILL" in c["reason"] for c in runtime_of(srv)["worker"]["recent_crashes"])


def test_doctor_on_a_crashing_profile_is_a_failed_gate(server: GatewayServer, tmp_path: Path) -> None:
    import hashlib

    artifact = tmp_path / "scripted"
    artifact.write_bytes(b"a stand-in artifact for the gate's file check\n")
    digest = hashlib.sha256(artifact.read_bytes()).hexdigest()
    profile = tmp_path / "crash-on-load.toml"
    profile.write_text(PROFILE.format(delay=0).replace('token_delay_s = 0', 'crash_on_load = "segv"')
                       .replace('sha256 = ""', f'sha256 = "{digest}"'))
    r = server.cli("doctor", "--profile", str(profile), "--json", check=False)
    assert r.returncode != 0 and r.returncode not in (-11, 139), (r.returncode, r.stderr)
    report = json.loads(r.stdout)
    gate1 = report["gates"][0]
    assert gate1["status"] == "fail" and "SIGSEGV" in gate1["detail"], gate1
