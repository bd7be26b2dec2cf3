"""openai backend against a real llama-cpp-python server on loopback (the default GGUF)."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from bench.harness import free_port
from runtimes.base import GenerationConfig, GenerationError, GenerationStats, RuntimeUnavailable
from runtimes.defaults import default_gguf_path
from runtimes.registry import create_runtime

pytestmark = pytest.mark.slow
ASK = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = open(tmp_path_factory.mktemp("server") / "server.log", "w+")  # closed in the finally below
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(default_gguf_path()), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--model_alias", "smollm2-135m"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"llama_cpp.server exited early: {log.read()[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not come up within 120 s")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def rt(server):
    runtime = create_runtime("openai", "", {"base_url": server, "timeout_s": 60})
    runtime.load()
    yield runtime
    runtime.unload()


def collect(items) -> tuple[str, GenerationStats]:
    items = list(items)
    assert isinstance(items[-1], GenerationStats)
    return "".join(items[:-1]), items[-1]


def test_streams_answer(rt):
    text, stats = collect(rt.stream(ASK, GenerationConfig(max_tokens=32)))
    assert text.strip()
    assert stats.output_tokens > 1 and stats.prompt_tokens > 0
    assert stats.ttft_ms and stats.ttft_ms > 0 and stats.decode_tps and stats.decode_tps > 0
    assert stats.stop_reason in ("stop", "length")


def test_max_tokens_gives_length(rt):
    ask = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    _, stats = collect(rt.stream(ask, GenerationConfig(max_tokens=5)))
    assert stats.stop_reason == "length"
    assert stats.output_tokens == 5


def test_model_defaults_to_first_served_and_chain(rt, server):
    assert rt.model == "smollm2-135m"
    chain = rt.describe().to_dict()
    assert chain["backend"] == "openai"
    assert chain["source"]["id"] == "smollm2-135m"
    assert chain["runtime"]["base_url"] == server
    assert chain["runtime"]["props_endpoint"] is False  # llama-cpp-python's server has no /props
    again = create_runtime("openai", "", {"base_url": server})
    again.load()
    assert again.describe().chain_id == rt.describe().chain_id


def test_verify_backend_and_tokenizer(rt):
    check = rt.verify_backend()
    assert check.passed and check.gate == 2
    assert "smollm2-135m" in check.evidence["models"]
    assert rt.count_tokens("hello world") == 2  # the server's own tokenizer, not chars/4
    assert rt._tokenize_route.endswith("/extras/tokenize")


def test_unknown_model_is_clear(server):
    bad = create_runtime("openai", "", {"base_url": server, "model": "gpt-9"})
    with pytest.raises(RuntimeUnavailable, match="does not serve model 'gpt-9'.*smollm2-135m"):
        bad.load()


def test_cancel_closes_stream_and_server_keeps_serving(rt):
    ask = [{"role": "user", "content": "Count from 1 to 300, one number per line."}]
    cancel = threading.Event()
    pieces = []
    stats = None
    for item in rt.stream(ask, GenerationConfig(max_tokens=400), cancel):
        if isinstance(item, GenerationStats):
            stats = item
        else:
            pieces.append(item)
            if len(pieces) == 2:
                cancel.set()
    assert stats is not None and stats.stop_reason == "cancelled"
    assert len(pieces) == 2
    text, _ = collect(rt.stream(ASK, GenerationConfig(max_tokens=8)))
    assert text


def test_generation_timeout(rt):
    ask = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    _, stats = collect(rt.stream(ask, GenerationConfig(max_tokens=400, timeout_s=0.3)))
    assert stats.stop_reason == "timeout"
    assert stats.output_tokens < 400


def test_down_server_is_clear_and_quick():
    port = free_port()  # nothing listens there any more
    rt = create_runtime("openai", "", {"base_url": f"http://127.0.0.1:{port}/v1"})
    started = time.monotonic()
    expected = rf"upstream http://127.0.0.1:{port}/v1 not reachable: connection refused"
    with pytest.raises(RuntimeUnavailable, match=expected):
        rt.load()
    assert time.monotonic() - started < 30  # refused at once: not the 120 s read timeout, however busy the box
    check = rt.verify_backend()
    assert not check.passed and "connection refused" in check.detail


def test_stalled_server_times_out():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)  # accepts (kernel backlog) but never answers
    port = listener.getsockname()[1]
    try:
        rt = create_runtime("openai", "", {"base_url": f"http://127.0.0.1:{port}/v1", "timeout_s": 0.5})
        started = time.monotonic()
        with pytest.raises(RuntimeUnavailable, match="not reachable: no answer in time"):
            rt.load()
        assert time.monotonic() - started < 30  # its 0.5 s timeout, not the default 120 s
    finally:
        listener.close()


class _BrokenStream(http.server.BaseHTTPRequestHandler):
    """Serves a model list, then a chat stream that dies after one chunk."""

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        body = b'{"object":"list","data":[{"id":"m","object":"model","owned_by":"x"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.wfile.write(b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n')
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)


def test_upstream_dying_mid_stream_is_generation_error():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _BrokenStream)
    worker = threading.Thread(target=httpd.serve_forever, daemon=True)
    worker.start()
    try:
        rt = create_runtime("openai", "", {"base_url": f"http://127.0.0.1:{httpd.server_port}/v1"})
        rt.load()
        pieces = []
        with pytest.raises(GenerationError, match="failed mid-generation"):
            for item in rt.stream(ASK, GenerationConfig(max_tokens=8)):
                pieces.append(item)
        assert pieces == ["Hel"]
    finally:
        httpd.shutdown()
        httpd.server_close()
