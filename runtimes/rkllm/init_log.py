"""What rkllm_init prints, captured and parsed: the provenance of the loaded library and model.

The library has no version function and logs to the process's fds 1 and 2, not through Python, so
the binding redirects both while rkllm_init runs and reads the version line (and the rest) from there.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator

_LOG_PATTERNS = {
    "rkllm_runtime_version": r"rkllm-runtime version:\s*([0-9][\w.\-]*)",
    "rknpu_driver_version": r"rknpu driver version:\s*([0-9][\w.\-]*)",
    "platform": r"(?<![_\w])platform:\s*([A-Za-z0-9]+)",
    "rkllm_toolkit_version": r"rkllm-toolkit version:\s*([0-9][\w.\-]*)",
    "max_context_limit": r"max_context_limit:\s*(\d+)",
    "npu_core_num": r"npu_core_num:\s*(\d+)",
    "target_platform": r"target_platform:\s*([A-Za-z0-9]+)",
    "model_dtype": r"model_dtype:\s*([A-Za-z0-9_]+)",
}


# What rkllm_init printed, by _LOG_PATTERNS key: a number where the text is all digits, else the text.
InitInfo = dict[str, str | int]


def parse_init_log(text: str) -> InitInfo:
    """The provenance fields rkllm_init prints (runtime/driver/platform, toolkit/dtype/cores/context)."""
    out: InitInfo = {}
    for key, pattern in _LOG_PATTERNS.items():
        m = re.search(pattern, text)
        if m:
            value = m.group(1).rstrip(".,")
            out[key] = int(value) if value.isdigit() else value
    return out


@contextlib.contextmanager
def capture_process_output() -> Iterator[dict[str, str]]:
    """Redirect the process's fds 1 and 2 to a temp file; the C library logs there, not via Python.

    Yields a dict whose "text" is filled on exit. C stdio buffers are flushed before the fds go
    back, otherwise a fully-buffered printf would land on the real stdout after the check.
    """
    with _CAPTURE_LOCK:  # fds 1 and 2 are process-wide: one capture at a time
        with _capture_fds() as box:
            yield box


_CAPTURE_LOCK = threading.Lock()


@contextlib.contextmanager
def _capture_fds() -> Iterator[dict[str, str]]:
    box: dict[str, str] = {"text": ""}
    libc = ctypes.CDLL(None)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    libc.fflush(None)
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as tmp:
        try:
            os.dup2(tmp.fileno(), 1)
            os.dup2(tmp.fileno(), 2)
            yield box
        finally:
            libc.fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", errors="replace")

