"""The backend's own process: load one artifact, then serve the gateway's requests over a pipe.

Run as ``python -m runtimes.worker_main`` by runtimes.supervised; never by hand. A segfault,
abort or OOM kill here ends this process only: the gateway sees the pipe close, names the signal,
and carries on. The first message on stdin says what to load ({"op": "init", "backend",
"artifact", "options"}: options may be long, argv is not the place); further requests follow on
stdin; replies go to the descriptor named by --reply-fd, and
stdout is pointed at stderr before anything native loads, so a library's prints cannot reach the
protocol. The main thread runs one request at a time; a reader thread takes requests off the pipe
so that a cancel reaches a generation while it runs, and ends the process when the gateway is gone.
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import sys
import threading
from typing import IO, Any

from runtimes.worker_protocol import FACTS, read_message, write_message


def _detach_from_terminal() -> None:
    """Ctrl-C in the gateway's terminal is the gateway's to handle (it drains, then unloads us).

    No PR_SET_PDEATHSIG: it fires when the *thread* that started us ends (a restart thread does),
    not the gateway; a gateway that dies closes our stdin, and read_requests exits on that."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # under memory pressure the kernel should pick the model, not the gateway
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as fh:
            fh.write("500")
    except OSError:
        pass


class Worker:
    def __init__(self, runtime: Any, reply: IO[bytes]) -> None:
        self.runtime = runtime
        self.reply = reply
        self.write_lock = threading.Lock()
        self.stop = threading.Event()  # the running generation's cancel
        self.requests: queue.Queue[dict[str, Any]] = queue.Queue()

    def send(self, message: dict[str, Any]) -> None:
        with self.write_lock:
            write_message(self.reply, message)

    def read_requests(self) -> None:
        while True:
            message = read_message(sys.stdin.buffer)
            if message is None:  # the gateway closed the pipe or died: nothing left to serve
                os._exit(0)
            if message.get("op") == "cancel":
                self.stop.set()
                self.runtime.cancel()
            else:
                self.requests.put(message)

    def serve(self) -> None:
        while True:
            message = self.requests.get()
            op = message.get("op")
            if op == "unload":
                self.runtime.unload()
                self.send({"t": "unloaded"})
                return
            rid = message.get("id")
            try:
                if op == "stream":
                    self.stream(rid, message)
                elif op == "count":
                    self.send({"t": "count", "id": rid, "n": self.runtime.count_tokens(message["text"])})
                elif op == "verify":
                    check = self.runtime.verify_backend()
                    self.send({"t": "verify", "id": rid, "v": {
                        "gate": check.gate, "passed": check.passed, "detail": check.detail,
                        "evidence": check.evidence}})
                elif op == "describe":
                    self.send({"t": "describe", "id": rid, "v": self.runtime.describe().data})
                else:
                    self.send({"t": "error", "id": rid, "kind": "protocol", "message": f"unknown op {op!r}"})
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the gateway as a message
                self.send({"t": "error", "id": rid, "kind": type(exc).__name__, "message": str(exc)})

    def stream(self, rid: Any, message: dict[str, Any]) -> None:
        from runtimes.base import GenerationConfig, GenerationStats

        self.stop.clear()
        config = GenerationConfig.from_dict(message.get("config") or {})
        for item in self.runtime.stream(message["messages"], config, self.stop):
            if isinstance(item, GenerationStats):
                self.send({"t": "stats", "id": rid, "v": item.to_dict()})
            else:
                self.send({"t": "text", "id": rid, "v": item})
        self.send({"t": "end", "id": rid})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtimes.worker_main")
    parser.add_argument("--reply-fd", type=int, required=True)
    args = parser.parse_args(argv)
    reply = os.fdopen(args.reply_fd, "wb", buffering=0)
    os.dup2(2, 1)  # stdout is stderr from here on: native prints never reach the protocol
    sys.stdout = sys.stderr
    _detach_from_terminal()

    from runtimes.base import RuntimeUnavailable
    from runtimes.registry import runtime_class

    init = read_message(sys.stdin.buffer)
    if init is None or init.get("op") != "init":
        write_message(reply, {"t": "load_failed", "kind": "protocol", "message": "no init message"})
        return 2
    try:
        runtime = runtime_class(init["backend"])(init["artifact"], init.get("options") or {})
        runtime.load()
        ready = {"t": "ready", "context_length": runtime.context_length,
                 "accepts_grammar": bool(getattr(runtime, "accepts_grammar", False)),
                 "pid": os.getpid(),
                 # plain facts of the loaded backend that callers read as attributes (bench: threads)
                 "facts": {k: getattr(runtime, k) for k in FACTS if isinstance(getattr(runtime, k, None), int)}}
    except RuntimeUnavailable as exc:
        write_message(reply, {"t": "load_failed", "kind": "unavailable", "message": str(exc)})
        return 3
    except Exception as exc:  # noqa: BLE001 - a load that raises is a verdict for the gateway
        write_message(reply, {"t": "load_failed", "kind": type(exc).__name__, "message": str(exc)})
        return 3
    worker = Worker(runtime, reply)
    worker.send(ready)
    threading.Thread(target=worker.read_requests, name="worker-requests", daemon=True).start()
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
