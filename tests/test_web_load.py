"""Load and cancellation: one generation at a time, a bounded queue (503 + Retry-After beyond it),
a client that disconnects cancels its generation, search never waits behind generation, and the
per-request token cap. A real server with a slow scripted runtime (0.2 s per piece).
"""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.slow

DELAY_S = 0.2
WORDS = 60  # a full answer takes WORDS * DELAY_S = 12 s
SCRIPT = " ".join(f"word{i}" for i in range(WORDS - 1)) + " [1]."
# The filler script is backed by no passage: the support check shows the evidence instead. These
# tests are about streaming, queueing and cancel, so they expect that outcome.
FILLER_OUTCOME = "evidence_only"
QUESTION = "What input voltage range does the piston board accept?"
QUEUE_SIZE = 2


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    config = (f"[server]\nqueue_size = {QUEUE_SIZE}\nrate_limit_per_minute = 1000\n"
              "[answer]\nmax_answer_tokens = 256\ntimeout_s = 1800\n")  # a held model is no timeout
    workdir = tmp_path_factory.mktemp("web-load")
    # the model holds its pieces while this file exists (absent: no wait), so a test keeps it busy for as
    # long as it needs, whatever the machine's speed; the marker says it is holding
    options = f'[options]\nhold_while_exists = "{workdir / "hold"}"\nholding_marker = "{workdir / "holding"}"\n'
    profile = (SCRIPTED_PROFILE.format(script=SCRIPT, delay=DELAY_S)
               .replace("max_tokens = 64", "max_tokens = 128\ntimeout_s = 1800").replace("[options]\n", options, 1))
    srv = GatewayServer(sample_data_dir, workdir, config=config, profile=profile)
    srv.start()
    yield srv
    srv.stop()


def ask(url: str, **body: Any) -> tuple[httpx.Response, float]:
    t0 = time.perf_counter()
    r = httpx.post(url + "/api/v1/ask", json={"question": QUESTION, **body}, timeout=120)
    return r, time.perf_counter() - t0


def queue_depth(url: str) -> int:
    text = httpx.get(url + "/api/v1/metrics", timeout=10).text
    return int(re.search(r"^manualqa_queue_depth (\d+)$", text, re.M).group(1))


def wait_depth(url: str, depth: int, timeout_s: float = 60) -> None:
    """Until `depth` asks generate or wait (polled: the limit bounds a hang, not the box's speed)."""
    deadline = time.monotonic() + timeout_s
    while (now := queue_depth(url)) != depth:
        assert time.monotonic() < deadline, f"the queue depth stayed {now}, never {depth}"
        time.sleep(0.05)


def test_max_tokens_is_honoured(server: GatewayServer) -> None:
    r, _ = ask(server.url, max_tokens=5)
    body = r.json()
    assert r.status_code == 200 and body["outcome"] == FILLER_OUTCOME
    assert body["draft"] == "word0 word1 word2 word3 word4"  # what the model wrote, cut at 5 tokens
    assert body["timings"]["output_tokens"] == 5
    assert body["timings"]["stop_reason"] == "length"
    assert body["generation_config"]["max_tokens"] == 5
    row = httpx.get(f"{server.url}/api/v1/answers/{body['id']}").json()
    assert row["generation_config"]["max_tokens"] == 5


def test_queue_full_gets_503_with_retry_after(server: GatewayServer) -> None:
    n = 1 + QUEUE_SIZE + 3
    depths: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            depths.append(queue_depth(server.url))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    # In order, each once the one before is in: the first holds the model (its pieces wait on a file until
    # every other ask is in), the next QUEUE_SIZE wait behind it, the rest come while the queue is full.
    # Timed holds (a 12 s script) raced a busy box: the first answer could end before the last asks came.
    hold, holding = server.workdir / "hold", server.workdir / "holding"
    hold.touch()
    holding.unlink(missing_ok=True)
    try:
        with ThreadPoolExecutor(1 + QUEUE_SIZE) as pool:
            admitted = [pool.submit(ask, server.url, max_tokens=WORDS)]
            deadline = time.monotonic() + 120  # bounds a hang, not the box's speed
            while not holding.exists():
                assert time.monotonic() < deadline, "the first ask never took the model"
                time.sleep(0.05)
            wait_depth(server.url, 1)
            for i in range(QUEUE_SIZE):
                admitted.append(pool.submit(ask, server.url, max_tokens=8))
                wait_depth(server.url, 2 + i)
            refused = [ask(server.url, max_tokens=8) for _ in range(n - 1 - QUEUE_SIZE)]
            hold.unlink()
            results = [f.result() for f in admitted] + refused
    finally:
        hold.unlink(missing_ok=True)
    done.set()
    watcher.join(5)
    ok = [r for r, _ in results if r.status_code == 200]
    busy = [r for r, _ in results if r.status_code == 503]
    assert len(ok) == 1 + QUEUE_SIZE, [r.status_code for r, _ in results]
    assert len(busy) == 3
    for r in busy:
        assert r.headers["retry-after"].isdigit() and int(r.headers["retry-after"]) > 0
        assert r.json()["error"]["code"] == "busy" and r.json()["error"]["message"]
    for r, tokens in zip(ok, (WORDS, 8, 8), strict=True):
        assert r.json()["outcome"] == FILLER_OUTCOME and r.json()["timings"]["output_tokens"] == tokens
    # The refused ones were refused at once, not after waiting in line.
    slowest_refusal = max(t for r, t in results if r.status_code == 503)
    slowest_answer = max(t for r, t in results if r.status_code == 200)
    assert slowest_refusal < slowest_answer
    assert max(depths) == 1 + QUEUE_SIZE, depths
    assert queue_depth(server.url) == 0


def _sse_tokens_then_close(url: str, n_tokens: int) -> str:
    """Open a stream, read n token events, then hang up; returns the answer id (retrieval event)."""
    answer_id = ""
    seen = 0
    with httpx.Client(timeout=60) as c, c.stream("POST", url + "/api/v1/ask",
                                                 json={"question": QUESTION, "stream": True}) as r:
        assert r.status_code == 200
        event = ""
        for line in r.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event == "retrieval":
                answer_id = json.loads(line[5:])["id"]
            elif line.startswith("data:") and event == "token":
                seen += 1
                if seen >= n_tokens:
                    break
            elif line.startswith("data:") and event == "final":
                raise AssertionError("the stream finished before the client hung up")
    return answer_id


def test_disconnect_cancels_generation_and_frees_the_slot(server: GatewayServer) -> None:
    answer_id = _sse_tokens_then_close(server.url, 2)
    assert answer_id

    # Told by what the server did, not by a stopwatch (a busy box stretches every step): the
    # disconnected answer is logged as cancelled, its runtime stopped early ...
    deadline = time.monotonic() + 60
    cancelled: list[str] = []
    while time.monotonic() < deadline and answer_id not in cancelled:
        rows = httpx.get(server.url + "/api/v1/answers", params={"outcome": "cancelled"}).json()["answers"]
        cancelled = [a["id"] for a in rows]
        time.sleep(0.2)
    assert answer_id in cancelled, "the disconnected stream should be logged as cancelled"
    row = httpx.get(f"{server.url}/api/v1/answers/{answer_id}").json()
    assert row["question"] == QUESTION
    assert row["answer"].startswith("word0 word1")
    produced = row["timings"].get("output_tokens")
    assert produced is not None and produced < WORDS / 2, f"runtime kept going: {produced} pieces"
    # ... the slot is free again, and the next question is served.
    wait_depth(server.url, 0)
    r, _ = ask(server.url, max_tokens=2)
    assert r.status_code == 200 and r.json()["outcome"] == FILLER_OUTCOME
    assert queue_depth(server.url) == 0
    metrics = httpx.get(server.url + "/api/v1/metrics").text
    assert int(re.search(r'manualqa_answers_total\{outcome="cancelled"\} (\d+)', metrics).group(1)) >= 1


def test_search_does_not_wait_behind_generation(server: GatewayServer) -> None:
    result: dict[str, Any] = {}

    def generate() -> None:
        result["response"], result["took"] = ask(server.url)  # the full 12 s script

    gen = threading.Thread(target=generate)
    gen.start()
    wait_depth(server.url, 1)  # it holds the slot
    timings = []
    for q in ("bed leveling probe", "power supply voltage", "hall effect sensor calibration"):
        t0 = time.perf_counter()
        r = httpx.post(server.url + "/api/v1/search", json={"query": q, "k": 3}, timeout=60)
        timings.append(time.perf_counter() - t0)
        assert r.status_code == 200 and len(r.json()["hits"]) == 3
    still_generating = gen.is_alive()
    gen.join(60)
    assert result["response"].status_code == 200
    gen_took = result["took"]
    assert gen_took > WORDS * DELAY_S * 0.9
    # the searches ended while the 12 s answer still streamed: they did not wait for its slot
    assert still_generating, ("the searches should have finished while the answer was still streaming",
                              timings, gen_took)


def test_stream_events_are_valid_json(server: GatewayServer) -> None:
    """A short streamed answer (token cap) ends with its final event; every data line is JSON."""
    with httpx.Client(timeout=60) as c:
        r = c.post(server.url + "/api/v1/ask", json={"question": QUESTION, "stream": True, "max_tokens": 3})
    datas = [line[5:].strip() for line in r.text.splitlines() if line.startswith("data:")]
    parsed = [json.loads(d) for d in datas]
    assert parsed[-1]["timings"]["output_tokens"] == 3 and parsed[-1]["outcome"] == FILLER_OUTCOME


def _sse_events(url: str, max_tokens: int, out: dict[str, list[tuple[str, Any, float]]], name: str) -> None:
    """Every (event, data, arrival time) of one streamed ask."""
    events: list[tuple[str, Any, float]] = []
    with httpx.stream("POST", url + "/api/v1/ask", timeout=120,
                      json={"question": QUESTION, "stream": True, "max_tokens": max_tokens}) as r:
        kind = "message"
        for line in r.iter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                events.append((kind, json.loads(line[5:]), time.perf_counter()))
    out[name] = events


def test_waiting_streams_hear_their_place_in_the_queue(server: GatewayServer) -> None:
    """Three asks at once: the first generates, the others are told how many are ahead, first come first served."""
    out: dict[str, list[tuple[str, Any, float]]] = {}
    threads = []
    # admitted in this order, each once the one before is in; "a" generates for 8 s meanwhile
    for depth, (name, tokens) in enumerate((("a", 40), ("b", 5), ("c", 5)), start=1):
        t = threading.Thread(target=_sse_events, args=(server.url, tokens, out, name))
        t.start()
        threads.append(t)
        wait_depth(server.url, depth)
    for t in threads:
        t.join(120)

    def places(name: str) -> list[int]:
        return [data["ahead"] for kind, data, _t in out[name] if kind == "queue"]

    def finished(name: str) -> float:
        return next(t for kind, _d, t in out[name] if kind == "final")

    assert places("a") == [], "the first question generates at once"
    assert places("b") == [1]
    assert places("c")[0] == 2 and places("c")[-1] == 1 and places("c") == sorted(places("c"), reverse=True)
    assert finished("a") < finished("b") < finished("c")
    # The queue position arrives before any token of that answer (it is what the technician sees while waiting).
    kinds_c = [kind for kind, _d, _t in out["c"]]
    assert kinds_c.index("queue") < kinds_c.index("token")
    assert queue_depth(server.url) == 0
