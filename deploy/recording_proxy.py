"""The recording proxy between Open WebUI and the gateway (deploy/openwebui_check.py).

Transparent: it forwards every byte and streams SSE through unbuffered, and writes one JSON line per
request (what Open WebUI sent, what the gateway answered: the streamed content put back together) so
that the check's report can say which of Open WebUI's requests reached the manuals as questions.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Recorder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def add(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.rows.append(row)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")


def summarize_request(body: bytes) -> dict[str, Any]:
    try:
        req = json.loads(body)
    except Exception:
        return {"raw": body[:2000].decode("utf-8", "replace")} if body else {}
    if not isinstance(req, dict):
        return {"raw": body[:2000].decode("utf-8", "replace")}
    msgs = req.get("messages") or []
    last_user = next((m for m in reversed(msgs) if isinstance(m, dict) and m.get("role") == "user"), {})
    content = last_user.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return {
        "model": req.get("model"),
        "stream": req.get("stream"),
        "n_messages": len(msgs),
        "roles": [m.get("role") for m in msgs if isinstance(m, dict)],
        "n_tools": len(req.get("tools") or []),
        "keys": sorted(req),
        "last_user": (content or "")[:400],
        "body": req,
    }


def summarize_response(status: int, ctype: str, body: bytes) -> dict[str, Any]:
    text = body.decode("utf-8", "replace")
    out: dict[str, Any] = {"status": status, "content_type": ctype, "raw": text[:20000]}
    if "text/event-stream" in ctype:
        content, manualqa, finish = [], None, None
        for line in text.splitlines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                continue
            try:
                chunk = json.loads(data)
            except Exception:
                continue
            for ch in chunk.get("choices") or []:
                piece = (ch.get("delta") or {}).get("content")
                if piece:
                    content.append(piece)
                finish = ch.get("finish_reason") or finish
            manualqa = chunk.get("manualqa", manualqa)
        out.update(content="".join(content), manualqa=manualqa, finish_reason=finish)
    else:
        try:
            obj = json.loads(text)
        except Exception:
            return out
        if isinstance(obj, dict) and obj.get("choices"):
            out["content"] = (obj["choices"][0].get("message") or {}).get("content")
            out["manualqa"] = obj.get("manualqa")
        elif isinstance(obj, dict) and obj.get("object") == "list":
            out["models"] = [m.get("id") for m in obj.get("data") or []]
        else:
            out["json"] = obj
    return out


def start_proxy(upstream_port: int, recorder: Recorder) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:
            pass

        def _read_body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        break
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                return b"".join(chunks)
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _forward(self) -> None:
            body = self._read_body()
            t0 = time.time()
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "connection", "transfer-encoding", "content-length",
                                            "accept-encoding", "keep-alive")}
            if body or self.command in ("POST", "PUT", "PATCH"):
                headers["Content-Length"] = str(len(body))
            conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=900)
            got = bytearray()
            status, ctype = 0, ""
            try:
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                status, ctype = resp.status, resp.getheader("Content-Type") or ""
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length", "keep-alive"):
                        self.send_header(k, v)
                self.send_header("Connection", "close")
                self.end_headers()
                while True:
                    piece = resp.read1(65536)
                    if not piece:
                        break
                    got += piece
                    self.wfile.write(piece)
                    self.wfile.flush()
            except Exception as e:  # the client went away, or the gateway did
                got += f"\n[proxy: {type(e).__name__}: {e}]".encode()
            finally:
                conn.close()
            row = {"t": round(t0, 3), "s": round(time.time() - t0, 3), "method": self.command, "path": self.path,
                   "request": summarize_request(body), "response": summarize_response(status, ctype, bytes(got))}
            recorder.add(row)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
