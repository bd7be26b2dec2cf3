"""The backend's own process: load one artifact, then serve the gateway's requests over a pipe.

Run as ``python -m runtimes.worker_main`` by runtimes.worker_lifecycle (SupervisedRuntime); never by hand. A segfault,
abort or OOM kill here ends this process only: the gateway sees the pipe close, names the signal,
and carries on. The first message on stdin says what to load (worker_protocol.Init); further
requests follow on stdin; replies go to the descriptor named by --reply-fd, and
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
from typing import IO, TYPE_CHECKING

import msgspec

from runtimes import worker_protocol as wp

if TYPE_CHECKING:
    from runtimes.base import Runtime


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
    def __init__(self, runtime: Runtime, reply: IO[bytes]) -> None:
        self.runtime = runtime
        self.reply = reply
        self.write_lock = threading.Lock()
        self.stop = threading.Event()  # the running generation's cancel
        self.requests: queue.Queue[wp.AnyRequest] = queue.Queue()

    def send(self, message: wp.Reply) -> None:
        with self.write_lock:
            wp.write_message(self.reply, message)

    def read_requests(self) -> None:
        while True:
            try:
                message = wp.read_request(sys.stdin.buffer)
            except msgspec.MsgspecError as exc:  # a gateway of another version: say so, keep serving
                self.send(wp.Error(id=None, kind="protocol", message=f"unreadable request: {exc}"))
                continue
            if message is None:  # the gateway closed the pipe or died: nothing left to serve
                os._exit(0)
            if isinstance(message, wp.Cancel):
                self.stop.set()
                self.runtime.cancel()
            else:
                if isinstance(message, wp.Stream):
                    # cleared here, in pipe order: a cancel sent right behind its stream request
                    # must not be wiped out by the serving thread starting that stream later
                    self.stop.clear()
                self.requests.put(message)

    def serve(self) -> None:
        while True:
            message = self.requests.get()
            if isinstance(message, wp.Unload):
                self.runtime.unload()
                self.send(wp.Unloaded())
                return
            rid = getattr(message, "id", None)
            try:
                self.handle(message)
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the gateway as a message
                self.send(wp.Error(id=rid, kind=type(exc).__name__, message=str(exc)))

    def handle(self, message: wp.AnyRequest) -> None:
        if isinstance(message, wp.Stream):
            self.stream(message)
        elif isinstance(message, wp.Count):
            self.send(wp.Counted(id=message.id, n=self.runtime.count_tokens(message.text)))
        elif isinstance(message, wp.Verify):
            check = self.runtime.verify_backend()
            self.send(wp.Verified(id=message.id, gate=check.gate, passed=check.passed, detail=check.detail,
                                  evidence=check.evidence))
        elif isinstance(message, wp.Describe):
            self.send(wp.Described(id=message.id, v=self.runtime.describe().data))
        else:
            self.send(wp.Error(id=None, kind="protocol", message=f"unexpected request {type(message).__name__}"))

    def stream(self, message: wp.Stream) -> None:
        from runtimes.base import GenerationStats

        for item in self.runtime.stream(message.messages, message.config, self.stop):
            if isinstance(item, GenerationStats):
                self.send(wp.Stats(id=message.id, v=item))
            else:
                self.send(wp.Text(id=message.id, v=item))
        self.send(wp.End(id=message.id))


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

    try:
        init = wp.read_request(sys.stdin.buffer)
    except msgspec.ValidationError:
        init = None
    if not isinstance(init, wp.Init):
        wp.write_message(reply, wp.LoadFailed(kind="protocol", message="no init message"))
        return 2
    try:
        runtime = runtime_class(init.backend)(init.artifact, init.options)
        runtime.load()
        ready = wp.Ready(context_length=runtime.context_length, accepts_grammar=runtime.accepts_grammar,
                         pid=os.getpid(),
                         # plain facts of the loaded backend that callers read as attributes (bench: threads)
                         facts={k: getattr(runtime, k) for k in wp.FACTS
                                if isinstance(getattr(runtime, k, None), int)})
    except RuntimeUnavailable as exc:
        wp.write_message(reply, wp.LoadFailed(kind="unavailable", message=str(exc)))
        return 3
    except Exception as exc:  # noqa: BLE001 - a load that raises is a verdict for the gateway
        wp.write_message(reply, wp.LoadFailed(kind=type(exc).__name__, message=str(exc)))
        return 3
    worker = Worker(runtime, reply)
    worker.send(ready)
    threading.Thread(target=worker.read_requests, name="worker-requests", daemon=True).start()
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
