"""Measurements shared by the bench scripts, so that every side of a comparison is timed the same way."""

from __future__ import annotations

import platform
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def timed(pieces: Iterable[str]) -> dict[str, Any]:
    """Consume streamed text pieces: TTFT = start -> first non-empty piece; tokens/s over the pieces after it."""
    start = time.perf_counter()
    first = last = None
    n, text = 0, []
    for piece in pieces:
        if not piece:
            continue
        last = time.perf_counter()
        first = first or last
        n += 1
        text.append(piece)
    return {"ttft_ms": (first - start) * 1000 if first else None,
            "tps": (n - 1) / (last - first) if first and last and last > first and n > 1 else None,
            "pieces": n, "text": "".join(text)}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"
