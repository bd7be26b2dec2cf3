"""The hostile campaign that stays: requests an attacker or a broken client sends, against a real
server, each of which once crashed it, leaked memory or kept rights it should have lost.

- a revoked key's admin session loses its rights at once;
- malformed input is a 4xx in the one JSON error shape, never a 500 (malformed JSON on every
  route that reads a body, JSON nested 20,000 deep, absurd `since`, bad Host ports);
- chunked bodies are capped while they stream: 413 early, server RSS stays near idle;
- extractive answers and the evidence step do not wait for the generation slot.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from bench.harness import proc_mib
from tests.support.http import error_of
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.slow

QUESTION = "What input voltage range does the piston board accept?"
DELAY_S = 0.3
SLOW_SCRIPT = " ".join(f"word{i}" for i in range(100)) + " [1]."  # cut at the profile's 64 tokens: 19 s
# answer.timeout_s far above the default: a held generation must end when its test lets it go, never
# because a loaded box made the test slower than the answer's deadline
CONFIG = """
[answer]
timeout_s = 1800

[server]
rate_limit_per_minute = 100000
queue_size = 1
max_json_kb = 64
"""


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("hostile")
    hold = work / "hold"  # absent: the model streams as scripted; present: it waits (a test holds the slot)
    # the profile's generation timeout too: the lower of it (default 120 s) and answer.timeout_s applies
    profile = SCRIPTED_PROFILE.format(script=SLOW_SCRIPT, delay=DELAY_S).replace(
        "[options]\n", f'[options]\nhold_while_exists = "{hold}"\n', 1).replace(
        "[generation]\n", "[generation]\ntimeout_s = 1800\n", 1)
    srv = GatewayServer(sample_data_dir, work, config=CONFIG, profile=profile)
    srv.hold = hold
    srv.start()
    srv.admin = srv.admin_key()
    yield srv
    srv.stop()



def healthy(srv: GatewayServer) -> None:
    assert srv.alive(), srv.log_path.read_text()[-2000:]
    assert httpx.get(srv.url + "/api/v1/health", timeout=10).status_code == 200


# -- 1. revocation ends admin sessions -----------------------------------------------------------

def test_revoked_key_loses_its_admin_session_at_once(server: GatewayServer) -> None:
    key = server.cli("keys", "create", "soon-revoked", "--role", "admin").stdout.strip()
    client = httpx.Client(base_url=server.url, timeout=30)
    login = client.post("/admin/login", json={"key": key})
    assert login.status_code == 200, login.text
    csrf = login.json()["csrf"]
    assert client.get("/admin/session").status_code == 200
    before = client.post("/api/v1/index/versions/nope/activate", headers={"X-CSRF-Token": csrf})
    assert before.status_code not in (401, 403), before.text  # the session administers (404: no such version)

    server.cli("keys", "revoke", "soon-revoked")

    error_of(client.get("/admin/session"), 401)
    for method, path in [("POST", "/api/v1/index/rollback"), ("DELETE", "/api/v1/manuals/" + "0" * 64),
                         ("POST", "/api/v1/index/versions/nope/activate")]:
        r = client.request(method, path, headers={"X-CSRF-Token": csrf})
        error_of(r, 401)
    # and it stays out: the session is gone, not just refused once
    error_of(client.get("/admin/session"), 401)
    client.close()
    healthy(server)


# -- 2. malformed input is a 4xx, never a 500 ---------------------------------------------------

BODY_ROUTES = ["/admin/login", "/api/v1/ask", "/api/v1/search", "/v1/chat/completions",
               "/api/v1/answers/01ARZ3NDEKTSV4RRFFQ69G5FAV/feedback"]
MALFORMED = [b"{", b"{\"key\": ", b"[1, 2", b"\xff\xfe\x00{", b"{\"a\": 1}}", b"nul", b"\"\\ud800\"",
             b"{\"key\": \"\\u00\"}", b"1e99999", b"{" * 50 + b"}" * 49, b"\x00" * 10, b"{'key': 1}"]


@pytest.mark.parametrize("route", BODY_ROUTES)
def test_malformed_json_is_a_400_on_every_route(server: GatewayServer, route: str) -> None:
    for body in MALFORMED:
        r = httpx.post(server.url + route, content=body, headers={"Content-Type": "application/json"},
                       timeout=30)
        assert r.status_code < 500, (route, body, r.status_code, r.text[:200])
        error_of(r, 400, 401, 404, 422)
    healthy(server)


def test_deeply_nested_json_is_a_400(server: GatewayServer) -> None:
    for route in ("/api/v1/ask", "/api/v1/search", "/admin/login", "/v1/chat/completions"):
        for depth in (20_000, 65):
            body = "[" * depth + "]" * depth
            r = httpx.post(server.url + route, content=body, headers={"Content-Type": "application/json"},
                           timeout=30)
            err = error_of(r, 400)
            assert "nest" in err["message"], err
    healthy(server)


@pytest.mark.parametrize("since", ["99999999999d", "9" * 40 + "m", "99999999999999999h", "-5d",
                                   "0001-01-01T00:00:00", "yesterday"])
def test_absurd_since_is_a_400(server: GatewayServer, since: str) -> None:
    r = httpx.get(server.url + "/api/v1/answers/", params={"since": since}, timeout=30)
    if since == "0001-01-01T00:00:00":  # a valid (if early) time: every answer
        assert r.status_code == 200, r.text
    else:
        error_of(r, 400)
    healthy(server)


def raw_get(srv: GatewayServer, path: str, host: str) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize("host", ["localhost:99999", "127.0.0.1:0x50", "localhost:-1", "[::1", "a:b:c",
                                  "localhost:65536", "ex ample.org"])
def test_bad_host_header_is_a_400(server: GatewayServer, host: str) -> None:
    status, body = raw_get(server, "/api/v1/health", host)
    assert status == 400, (host, status, body[:200])
    error = json.loads(body)["error"]
    assert error["code"] == "invalid_host" and error["message"], error  # also Litestar's own check (issue 24)
    healthy(server)


# -- 3. chunked bodies are capped while they stream ----------------------------------------------

def chunked_post(srv: GatewayServer, path: str, total_mb: int, chunk_kb: int = 256) -> tuple[int | None, float]:
    """Send a chunked JSON body of total_mb; returns (status, MB actually sent) — the server may
    answer 413 and close the connection long before the client has sent everything."""
    chunk = b"[" + b"1," * (chunk_kb * 512 - 1)
    sent = 0
    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n".encode())
        try:
            while sent < total_mb * 1024 * 1024:
                s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed: what we want
        s.settimeout(30)
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
    status = int(data.split()[1]) if data.startswith(b"HTTP/") else None
    return status, sent / 1048576


def test_chunked_bodies_are_refused_early_and_memory_stays_flat(server: GatewayServer) -> None:
    pid = server.proc.pid
    healthy(server)
    idle, peak_before = (proc_mib(pid)[k] for k in ("VmRSS", "VmHWM"))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda p: chunked_post(server, p, 100),
                                ["/api/v1/search", "/api/v1/search", "/admin/login", "/api/v1/ask"]))
    for status, sent_mb in results:
        assert status in (413, None), results
        assert sent_mb < 100, results  # refused while streaming, not after reading 100 MB
    assert any(status == 413 for status, _ in results), results
    grown_mb = proc_mib(pid)["VmHWM"] - max(peak_before, idle)
    assert grown_mb < 100, f"peak RSS grew {grown_mb:.0f} MB under four 100 MB chunked bodies"
    healthy(server)


def test_declared_oversize_body_is_a_413_before_reading(server: GatewayServer) -> None:
    r = httpx.post(server.url + "/api/v1/search", content=b"{" + b" " * (65 * 1024) + b"}",
                   headers={"Content-Type": "application/json"}, timeout=30)
    error_of(r, 413)


# -- 7. extractive answers do not wait behind generation ------------------------------------------

def queue_depth(srv: GatewayServer) -> int:
    text = httpx.get(srv.url + "/api/v1/metrics", timeout=10).text
    return int(re.search(r"^manualqa_queue_depth (\d+)$", text, re.M).group(1))


def wait_depth(srv: GatewayServer, depth: int) -> None:
    deadline = time.monotonic() + 60  # bounds a hang, not the box's speed
    while (now := queue_depth(srv)) != depth:
        assert time.monotonic() < deadline, f"the queue depth stayed {now}, never {depth}"
        time.sleep(0.05)


def test_extractive_answers_run_beside_a_generation(server: GatewayServer) -> None:
    url = server.url + "/api/v1/ask"

    def generation(**extra: int) -> httpx.Response:
        return httpx.post(url, json={"question": QUESTION, "mode": "generate", **extra}, timeout=120)

    server.hold.touch()  # the generation holds the slot until the checks below are done, whatever the box
    try:
        with ThreadPoolExecutor(2) as pool:
            gen = pool.submit(generation)
            wait_depth(server, 1)  # the generation holds the slot now; the queue (size 1) fills next
            queued = pool.submit(generation, max_tokens=2)
            wait_depth(server, 2)
            started = time.perf_counter()
            extractive = [httpx.post(url, json={"question": QUESTION, "mode": "extractive"}, timeout=120)
                          for _ in range(3)]
            took = time.perf_counter() - started
            # Told by order, not by a stopwatch: the three came back while the generation still held the
            # slot and another waited for it, which one behind the other would never do.
            gen_done, depth = gen.done(), queue_depth(server)
            server.hold.unlink()  # the generation goes on, then the queued one
            for r in extractive:
                assert r.status_code == 200, r.text[:300]
                assert r.json()["mode"].startswith("extractive") and r.json()["outcome"] != "cancelled"
            assert not gen_done and depth == 2, f"the extractive answers took {took:.1f} s: they waited for the model"
            assert gen.result().status_code == 200
            assert queued.result().status_code in (200, 503)
    finally:
        server.hold.unlink(missing_ok=True)
    healthy(server)


# -- 4. every answer a client saw is in the log ----------------------------------------------------

KILL_CONFIG = """
[server]
rate_limit_per_minute = 100000
queue_size = 64
"""


def test_kill_9_during_answers_loses_no_answer_a_client_saw(sample_data_dir: Path, tmp_path: Path) -> None:
    profile = SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0)
    srv = GatewayServer(sample_data_dir, tmp_path, config=KILL_CONFIG, profile=profile)
    seen: set[str] = set()
    lock = threading.Lock()
    for _round in range(4):
        srv.start()
        deadline = time.monotonic() + 120  # warm-up: asks are 503 "loading" until the index is open
        while httpx.post(srv.url + "/api/v1/ask", json={"question": QUESTION, "mode": "extractive"},
                         timeout=60).status_code != 200:
            assert time.monotonic() < deadline, "the server never answered"
            time.sleep(0.5)
        stop = threading.Event()

        def client(mode: str, stop: threading.Event = stop) -> None:
            with httpx.Client(base_url=srv.url, timeout=30) as c:
                while not stop.is_set():
                    try:
                        r = c.post("/api/v1/ask", json={"question": QUESTION, "mode": mode})
                    except httpx.HTTPError:
                        return
                    if r.status_code == 200:
                        with lock:
                            seen.add(r.json()["id"])

        threads = [threading.Thread(target=client, args=(m,)) for m in ("extractive", "generate") * 4]
        for t in threads:
            t.start()
        # killed while answers are coming (after 15 more of them in this round, however slowly they
        # come on a busy box: a fixed 3 s gave too few to count on)
        deadline, wanted = time.monotonic() + 120, len(seen) + 15
        while len(seen) < wanted and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(srv.proc.pid, 9)
        srv.proc.wait(timeout=10)
        stop.set()
        for t in threads:
            t.join(timeout=30)
    import sqlite3

    assert len(seen) > 50, f"only {len(seen)} answers completed: the test did not load the server"
    conn = sqlite3.connect(srv.data / "gateway.db")
    logged = {row[0] for row in conn.execute("SELECT id FROM answers")}
    conn.close()
    missing = seen - logged
    assert not missing, f"{len(missing)} of {len(seen)} answers seen by clients are not in the log"
