"""The programs OCR runs (poppler's `pdftoppm` and `pdfimages`, Tesseract), apart from what is done
with their output (ingest.ocr): finding them, asking their version, listing a PDF's images, and
running one on a page under its own CPU-time limit with a wall-clock backstop of WALL_FACTOR x that.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from ingest.child_wait import run_child

INSTALL_HINT = "install tesseract-ocr (Debian: apt-get install tesseract-ocr tesseract-ocr-eng poppler-utils)"
WALL_FACTOR = 10  # a page program stuck (not using CPU) is stopped after this x its CPU limit in wall time
# Starts a page program with its CPU limit in force, then becomes it (exec keeps the pid and the limit).
_CPU_LIMITED = (
    "import os, resource as r, sys\n"
    "cpu, (_, hard) = int(sys.argv[1]), r.getrlimit(r.RLIMIT_CPU)\n"
    "if hard == r.RLIM_INFINITY or hard > cpu + 1: r.setrlimit(r.RLIMIT_CPU, (cpu, cpu + 1))\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


class OcrError(Exception):
    """One page could not be read; the message says why (no file name: the caller adds the page)."""


class OcrUnavailable(OcrError):
    """The OCR programs or the language data are not installed: no page can be read."""


def tool(name: str) -> str:
    """The path of `name` (tesseract, pdftoppm, pdfimages) or OcrUnavailable saying what to install."""
    found = shutil.which(name)
    if not found:
        raise OcrUnavailable(f"{name} is not installed: {INSTALL_HINT}")
    return found


def tesseract_version() -> str | None:
    """"tesseract 5.3.0" (what the manifest records), None when it is not installed."""
    try:
        out = subprocess.run([tool("tesseract"), "--version"], capture_output=True, timeout=20, check=False)
    except (OcrError, OSError, subprocess.TimeoutExpired):
        return None
    first = (out.stdout or out.stderr).decode("utf-8", "replace").strip().splitlines()
    return first[0].strip() if first else None


def page_images(path: Path, timeout_s: float) -> dict[int, list[tuple[int, int, float]]]:
    """The images placed on each page, from `pdfimages -list` (no image is decoded): page ->
    [(width px, height px, square inches on the page)]. {} when pdfimages is missing or fails: then
    "auto" reads only the pages with no text at all, and no image is refused for its size."""
    try:
        out = subprocess.run([tool("pdfimages"), "-list", str(path)], capture_output=True,
                             timeout=max(5.0, WALL_FACTOR * timeout_s), check=False, stdin=subprocess.DEVNULL)
    except (OcrError, OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[int, list[tuple[int, int, float]]] = {}
    for line in out.stdout.decode("utf-8", "replace").splitlines()[2:]:
        cols = line.split()
        try:
            page, width, height, xppi, yppi = int(cols[0]), int(cols[3]), int(cols[4]), float(cols[12]), float(cols[13])
        except (IndexError, ValueError):
            continue
        if cols[2] in ("image", "stencil"):
            sqin = (width / xppi) * (height / yppi) if xppi > 0 and yppi > 0 else 0.0
            found.setdefault(page, []).append((width, height, sqin))
    return found


def _run(command: list[str], cpu_s: float, what: str) -> tuple[bytes, str]:
    """Run one program on a page under a CPU-time limit of its own (RLIMIT_CPU, set before it starts,
    as ingest.sandbox does for the worker), so a busy box makes a page slower, never refused; a
    program stuck without using CPU is stopped after WALL_FACTOR x that in wall-clock time."""
    cpu = max(1, math.ceil(cpu_s))
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}  # one thread: the worker's share of the box
    try:
        # a program still using CPU at the backstop is starved by a busy box, not stuck: it gets more time
        proc = run_child([sys.executable, "-I", "-S", "-c", _CPU_LIMITED, str(cpu), *command],
                         WALL_FACTOR * cpu, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        raise OcrError(f"{what} was not finished after {WALL_FACTOR * cpu} s of wall-clock time and was stopped: "
                       f"it is stuck, or the box is overloaded ({WALL_FACTOR} x ingest.ocr_page_timeout_s)") from None
    except OSError as exc:
        raise OcrError(f"{what} could not be started ({exc.strerror or exc})") from None
    if proc.returncode == -signal.SIGXCPU:
        raise OcrError(f"{what} used more than {cpu} s of CPU time on the page and was stopped "
                       "(ingest.ocr_page_timeout_s)")
    if proc.returncode == -signal.SIGKILL:
        raise OcrError(f"{what} was killed: over its {cpu} s CPU limit (ingest.ocr_page_timeout_s) or out of "
                       "memory (ingest.memory_mb)")
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace")
        if proc.returncode < 0 or "alloc" in err.lower() or "memory" in err.lower():
            raise OcrError(f"{what} ran out of memory or crashed on the page image (ingest.memory_mb)")
        last = (err.strip().splitlines() or ["no output"])[-1][:160]
        raise OcrError(f"{what} failed (exit {proc.returncode}: {last})")
    return proc.stdout, proc.stderr.decode("utf-8", "replace")
