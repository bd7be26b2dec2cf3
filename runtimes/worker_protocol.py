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
import os
import signal
from typing import IO, Any

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


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a live process has used, from /proc; None where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a live process, from /proc; None where unreadable."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return None


def peak_rss_bytes(pid: int) -> int | None:
    """The highest resident memory a live process has had (VmHWM), from /proc; None where unreadable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return None
