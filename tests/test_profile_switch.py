"""A running server switches its deployment profile without a restart: `manualqa profile activate`
reaches it, the new chain passes gate 1 beside the old one, answers already admitted finish on the
old chain, new ones run on the new chain; a chain that fails gate 1 is refused and the old one serves.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.slow

QUESTION = "What input voltage range does the piston board accept?"
SLOW_WORDS = 25


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def profile(name: str, script: str, delay: float = 0.0, extra: str = "") -> str:
    """A scripted profile gate 1 can vouch for: its artifact is an empty file named "scripted" beside it."""
    text = SCRIPTED_PROFILE.format(script=script, delay=delay).replace('name = "scripted-test"', f'name = "{name}"')
    text = text.replace('sha256 = ""', f'sha256 = "{EMPTY_SHA256}"')
    return text.replace("context_length = 4096", f"context_length = 4096\n{extra}")


def deployment(srv: GatewayServer) -> dict[str, Any]:
    return httpx.get(srv.url + "/api/v1/deployment", timeout=30).json()


def wait_for(srv: GatewayServer, predicate: Any, timeout_s: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        record = deployment(srv)
        if predicate(record):
            return record
        time.sleep(0.3)
    raise AssertionError(f"deployment never reached the expected state: {record}")


def test_profile_activate_reaches_the_running_server(sample_data_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "scripted").write_bytes(b"")
    files = {"a": tmp_path / "a.toml", "b": tmp_path / "b.toml", "broken": tmp_path / "broken.toml"}
    slow = " ".join(f"alpha{i}" for i in range(SLOW_WORDS)) + " [1]."
    files["a"].write_text(profile("chain-a", slow, delay=0.15), encoding="utf-8")
    files["b"].write_text(profile("chain-b", "bravo [1]."), encoding="utf-8")
    files["broken"].write_text(profile("chain-broken", "x", extra='fail_on_load = "no such device"'),
                               encoding="utf-8")
    srv = GatewayServer(sample_data_dir, tmp_path / "srv", config="[server]\nrate_limit_per_minute = 1000\n")
    srv.cli("profile", "activate", str(files["a"]), "--skip-doctor")
    srv.start()
    try:
        admin = srv.admin_key()
        first = httpx.post(srv.url + "/api/v1/ask", json={"question": QUESTION, "max_tokens": 2}, timeout=60).json()
        chain_a = first["chain_id"]
        assert deployment(srv)["profile"]["name"] == "chain-a" and chain_a

        # An answer generating on chain A while B is activated finishes on A.
        slow_answer: dict[str, Any] = {}
        generating = threading.Event()

        def ask_slowly() -> None:
            try:
                with httpx.stream("POST", srv.url + "/api/v1/ask", json={"question": QUESTION, "stream": True},
                                  timeout=120) as r:
                    event = ""
                    for line in r.iter_lines():
                        if line.startswith("event:"):
                            event = line[6:].strip()
                        elif line.startswith("data:") and event == "token":
                            generating.set()
                        elif line.startswith("data:") and event == "final":
                            slow_answer.update(json.loads(line[5:]))
            finally:
                generating.set()

        t = threading.Thread(target=ask_slowly)
        t.start()
        # B is activated once the answer generates on A (a fixed 1 s sleep raced its retrieval on a busy box)
        assert generating.wait(120)
        srv.cli("profile", "activate", str(files["b"]))  # gate 1 in the CLI too
        record = wait_for(srv, lambda r: r["profile"]["name"] == "chain-b")
        t.join(120)
        assert slow_answer["chain_id"] == chain_a and slow_answer["timings"]["output_tokens"] == SLOW_WORDS + 1
        assert record["last_switch"]["status"] == "switched" and record["last_switch"]["from"] == "chain-a"
        chain_b = record["chain_id"]
        assert chain_b and chain_b != chain_a
        after = httpx.post(srv.url + "/api/v1/ask", json={"question": QUESTION, "max_tokens": 2}, timeout=60).json()
        assert after["chain_id"] == chain_b
        row = httpx.get(f"{srv.url}/api/v1/answers/{after['id']}", timeout=30).json()
        assert row["profile"] == "chain-b"

        # A chain that cannot load is refused (reload answers at once); B keeps serving.
        srv.cli("profile", "activate", str(files["broken"]), "--skip-doctor")
        r = httpx.post(srv.url + "/api/v1/deployment/reload", headers={"Authorization": f"Bearer {admin}"},
                       timeout=120)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["status"] == "refused" and "no such device" in body["detail"] and body["to"] == "chain-broken"
        assert deployment(srv)["chain_id"] == chain_b
        still = httpx.post(srv.url + "/api/v1/ask", json={"question": QUESTION, "max_tokens": 2}, timeout=60).json()
        assert still["chain_id"] == chain_b
        # Readers cannot trigger a reload.
        reader = srv.cli("keys", "create", "reader", "--role", "reader").stdout.strip()
        r = httpx.post(srv.url + "/api/v1/deployment/reload", headers={"Authorization": f"Bearer {reader}"},
                       timeout=30)
        assert r.status_code == 403 and "error" in r.json()

        # Rolling back to B (already serving) changes nothing; the log says which chain answered what.
        srv.cli("profile", "rollback")
        body = httpx.post(srv.url + "/api/v1/deployment/reload", headers={"Authorization": f"Bearer {admin}"},
                          timeout=60).json()
        assert body["status"] == "unchanged" and body["profile"] == "chain-b", json.dumps(body)

        # A chain whose worker segfaults while loading is refused the same way, and we are still up.
        crashing = tmp_path / "crashing.toml"
        crashing.write_text(profile("chain-crashing", "x", extra='crash_on_load = "segv"').replace(
            "tests.support.scripted:ScriptedRuntime", "tests.support.crashing:CrashingRuntime"), encoding="utf-8")
        srv.cli("profile", "activate", str(crashing), "--skip-doctor")
        r = httpx.post(srv.url + "/api/v1/deployment/reload", headers={"Authorization": f"Bearer {admin}"},
                       timeout=120)
        body = r.json()
        assert r.status_code == 200 and body["status"] == "refused" and "SIGSEGV" in body["detail"], body
        assert srv.alive() and deployment(srv)["chain_id"] == chain_b
        still = httpx.post(srv.url + "/api/v1/ask", json={"question": QUESTION, "max_tokens": 2}, timeout=60).json()
        assert still["chain_id"] == chain_b
    finally:
        srv.stop()
