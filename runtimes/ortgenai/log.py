"""ONNX Runtime's own word on where a model's nodes run, for gate 2 of the ortgenai backend.

ONNX Runtime says which execution provider each node was assigned to only in its verbose session log
("Node placements", "All nodes placed on [CPUExecutionProvider]. Number of nodes: 309"), which it writes
to file descriptor 2, not to a Python callback. So the ortgenai backend creates its session with
log_severity_level 0 inside `capture_stderr()` and keeps the placement lines; warnings and errors are
written back to stderr, the verbose rest is dropped. Verbose logging is per session; while it generates,
ORT logs at that level only its memory-pattern fallbacks, which the backend turns off (enable_mem_pattern:
no speed difference on SmolLM2-135M, 31-181 prompt tokens; checked with onnxruntime-genai 0.18).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator

_lock = threading.Lock()  # one capture at a time: descriptor 2 is the process's
_PLACED = re.compile(r"placed on \[(\w+)\]\. Number of nodes: (\d+)")
_LEVEL = re.compile(r"\[([VIWEF]):onnxruntime")


@contextlib.contextmanager
def capture_stderr() -> Iterator[list[str]]:
    """Descriptor 2 into a temporary file while the block runs; its lines land in the list after."""
    lines: list[str] = []
    with _lock, tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines.extend(tmp.read().decode("utf-8", errors="replace").splitlines())
            kept = [ln for ln in lines if not _is_chatter(ln)]
            if kept:
                os.write(2, ("\n".join(kept) + "\n").encode("utf-8"))


def _is_chatter(line: str) -> bool:
    """ORT's verbose and info lines (dropped); anything else, a warning or a library's print, is kept."""
    m = _LEVEL.search(line)
    return bool(m and m.group(1) in "VI") or not line.strip()


def placement(lines: list[str]) -> dict[str, int]:
    """Execution provider -> number of nodes ONNX Runtime assigned to it ({} when the log did not say)."""
    nodes: dict[str, int] = {}
    for line in lines:
        m = _PLACED.search(line)
        if m:
            nodes[m.group(1)] = nodes.get(m.group(1), 0) + int(m.group(2))
    return nodes


def provider_matches(requested: str, ort_name: str) -> bool:
    """"cpu" is CPUExecutionProvider, "cuda" CUDAExecutionProvider, "azure" AzureExecutionProvider..."""
    want = requested.lower().removesuffix("executionprovider")
    return ort_name.lower().removesuffix("executionprovider") == want


def errors(lines: list[str]) -> list[str]:
    """ORT's error lines from a capture (for a load failure's message)."""
    return [ln.strip() for ln in lines if (m := _LEVEL.search(ln)) and m.group(1) in "EF"]
