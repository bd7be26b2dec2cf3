"""The pipe between the gateway and a backend's worker process: one JSON object per line.

Why lines of JSON: tokens are small and few (tens per second), so framing costs microseconds,
a human can read a captured stream, and a torn last line (the worker died mid-write) is simply
not a message. The worker answers on its own file descriptor, never stdout, so whatever a native
library prints cannot corrupt the stream.

Requests (gateway -> worker): {"op": "count", "id", "text"}, {"op": "stream", "id", "messages",
"config"}, {"op": "cancel"}, {"op": "verify", "id"}, {"op": "describe", "id"}, {"op": "unload"}.
Replies (worker -> gateway): {"t": "ready", ...} or {"t": "load_failed", ...} once at start, then
{"t": "text" | "stats" | "end" | "error" | "count" | "verify" | "describe", "id", ...}.
"""

from __future__ import annotations

import json
import signal
from typing import IO, Any

# A worker's CPU time and memory, as the gateway reports them (read from /proc by runtimes.machine).
from runtimes.machine import cpu_seconds as cpu_seconds
from runtimes.machine import peak_rss_bytes as peak_rss_bytes
from runtimes.machine import rss_bytes as rss_bytes

# Attributes of a loaded backend that the worker reports once it is ready (SupervisedRuntime answers them).
FACTS = ("n_threads", "n_threads_batch", "n_gpu_layers", "n_ctx", "n_batch")

# A signal number as a reader would say it; anything else keeps its number.
_SIGNAL_NAMES = {int(s): s.name for s in signal.Signals}


def write_message(stream: IO[bytes], message: dict[str, Any]) -> None:
    """One message, flushed: the other side must see a token the moment it exists."""
    stream.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
    stream.flush()


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """The next message, or None at end of stream (the other side closed or died)."""
    while True:
        line = stream.readline()
        if not line:
            return None
        if not line.endswith(b"\n"):
            return None  # torn by a death mid-write: not a message
        line = line.strip()
        if line:
            message: dict[str, Any] = json.loads(line)
            return message


def exit_reason(returncode: int | None) -> str:
    """How a worker ended, as the answer log says it: 'SIGSEGV', 'exit status 3'."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        return _SIGNAL_NAMES.get(-returncode, f"signal {-returncode}")
    if returncode > 128 and (returncode - 128) in _SIGNAL_NAMES:  # a shell in between reports 128+N
        return _SIGNAL_NAMES[returncode - 128]
    return f"exit status {returncode}"
