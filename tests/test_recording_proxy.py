"""The Open WebUI check's recording proxy (deploy/recording_proxy.py) forwards a streamed chat completion
byte for byte and records what was asked and what came back, content put back together: the check's report
reads those rows to say which requests reached the manuals as questions."""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "deploy"))
from recording_proxy import Recorder, start_proxy  # noqa: E402

CHUNKS = [{"choices": [{"delta": {"role": "assistant"}}]}, {"choices": [{"delta": {"content": "115200 "}}]},
          {"choices": [{"delta": {"content": "8N1 [1]"}, "finish_reason": "stop"}], "manualqa": {"outcome": "x"}}]
SSE = "".join(f"data: {json.dumps(c)}\n\n" for c in CHUNKS) + "data: [DONE]\n\n"


class Upstream(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Upstream.seen.append(json.loads(body))
        data = SSE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def upstream() -> Iterator[int]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()


def test_a_streamed_reply_passes_through_and_is_recorded(upstream: int, tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "requests.jsonl")
    proxy = start_proxy(upstream, recorder)
    try:
        ask = {"model": "manualqa", "stream": True, "tools": [{"type": "function"}] * 3,
               "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "baud rate?"}]}
        req = urllib.request.Request(f"http://127.0.0.1:{proxy.server_address[1]}/v1/chat/completions",
                                     data=json.dumps(ask).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            got = resp.read().decode()
    finally:
        proxy.shutdown()
    assert got == SSE and Upstream.seen[-1] == ask
    rows = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["path"] == "/v1/chat/completions"
    request, response = rows[0]["request"], rows[0]["response"]
    assert (request["model"], request["stream"], request["n_tools"], request["last_user"]) == (
        "manualqa", True, 3, "baud rate?")
    assert request["roles"] == ["system", "user"]
    assert response["content"] == "115200 8N1 [1]" and response["finish_reason"] == "stop"
    assert response["manualqa"] == {"outcome": "x"}
