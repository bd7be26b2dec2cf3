"""Parse PDFs in a separate, capped process so that a hostile or broken file fails alone.

Each parse runs `python -m ingest.pdf` in a fresh child process. The child caps its own address
space (RLIMIT_AS = limits.memory_mb) and the page count; this side checks size and header first,
and turns every failure into one IngestError line that names the file. pypdf's own decompression
limits stay on inside the child.

limits.timeout_s (ingest.timeout_s) counts the child's CPU time: the kernel ends it (RLIMIT_CPU,
set before the worker's first line runs) once it has used that many CPU-seconds, so a manual is
refused for what it costs to parse, never because other work shares the CPU (the child also runs
at a lower priority, see ingest.pdf). A wall-clock backstop of WALL_FACTOR x timeout_s ends a
child that is stuck without using CPU (blocked, stopped).

If this process is killed (kill -9 of `manualqa ingest` or of the server) it cannot kill the
child, so the child is told this process's pid and given the read end of a pipe whose write end
only this process holds; it exits when either says the parent is gone, and it also stops itself
at the wall-clock backstop (ingest.worker_limits: die_with_parent, limit_time).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Literal, overload

from ingest.child_wait import MAX_PERIODS, run_child
from ingest.discover import sha256_file
from ingest.models import IngestError, OcrPage, PageText, ParsedManual, ParseLimits
from ingest.pdf import Labels, Parsed, memory_message
from ingest.pdf_open import check_file

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])
try:
    import resource  # noqa: F401 - only whether the platform has rlimits
    _HAS_RLIMIT = hasattr(signal, "SIGXCPU")
except ImportError:  # not POSIX: only the wall-clock backstop applies
    _HAS_RLIMIT = False
# The wall-clock backstop in multiples of ingest.timeout_s: a worker that used no CPU for this long is
# stuck and stopped; one still using CPU (starved by a busy box) gets up to child_wait.MAX_PERIODS of it.
WALL_FACTOR = 20
# Starts the worker with its CPU limit already in force, then becomes `python -m ingest.pdf ...`
# (exec keeps the pid, the limits and the CPU time used so far). SIGXCPU ends it at the soft limit,
# SIGKILL 2 s later should it survive; a lower limit set from outside (systemd LimitCPU=) stays.
# No core file of a process that may hold 1 GB. Here, not in a preexec_fn: that is unsafe in a
# process with threads (the server, parse_many).
_START_LIMITED = (
    "import os, resource as r, sys\n"
    "cpu, (_, hard) = int(sys.argv[1]), r.getrlimit(r.RLIMIT_CPU)\n"
    "if hard == r.RLIM_INFINITY or hard > cpu + 2: r.setrlimit(r.RLIMIT_CPU, (cpu, cpu + 2))\n"
    "r.setrlimit(r.RLIMIT_CORE, (0, 0))\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n"
)


def parse_pdf(path: Path, limits: ParseLimits = ParseLimits()) -> ParsedManual:
    """Parse one PDF under `limits`; raises IngestError ("<file name>: <what is wrong>")."""
    path = Path(path)
    try:
        size = check_file(path, limits.max_file_mb)
        result = _run_worker(path, limits)
    except IngestError as exc:
        raise IngestError(f"{path.name}: {exc}") from None
    return ParsedManual(
        sha256=sha256_file(path),
        file_name=path.name,
        title=result["title"],
        page_count=result["page_count"],
        size_bytes=size,
        pages=[_page(row) for row in result["pages"]],
        pages_without_text=[int(n) for n in result["pages_without_text"]],
        outline=[(int(page), str(title)) for page, title in result.get("outline", [])],
        pdf_title=str(result.get("pdf_title") or ""),
        ocr={int(n): OcrPage(float(p["confidence"]), p["words"]) for n, p in (result.get("ocr") or {}).items()},
        unread={int(n): str(reason) for n, reason in (result.get("unread") or {}).items()},
        ocr_engine=dict(result.get("ocr_engine") or {}),
        respaced=sorted(int(n) for n in result.get("respaced") or []),
    )


def _page(row: tuple[int, str, str | None]) -> PageText:
    """A worker's [number, text, label] row (label None when the PDF has no /PageLabels)."""
    number, text, *rest = row
    return PageText(number=int(number), text=text, label=rest[0] if rest else None)


def read_labels(path: Path, limits: ParseLimits = ParseLimits()) -> list[str | None]:
    """The printed page labels of a PDF, one per page, read in a sandboxed worker like a parse.

    For manuals indexed before labels were kept: reading them costs a fraction of a full parse.
    Raises IngestError ("<file name>: <what is wrong>").
    """
    path = Path(path)
    try:
        check_file(path, limits.max_file_mb)
        result = _run_worker(path, limits, labels_only=True)
    except IngestError as exc:
        raise IngestError(f"{path.name}: {exc}") from None
    return [None if label is None else str(label) for label in result["labels"]]


def parse_many(
    paths: Iterable[Path], limits: ParseLimits = ParseLimits(), workers: int = 2
) -> Iterator[tuple[Path, ParsedManual | IngestError]]:
    """Parse several PDFs, `workers` child processes at a time, yielding in COMPLETION order.

    Results come out as soon as each parse finishes (not in input order), so a caller can embed one
    manual while the next ones parse. At most 2 x workers parses are queued ahead of the caller, so
    a slow consumer does not pile up parsed text. Every path yields exactly once: a ParsedManual or
    the IngestError that explains why it was refused. Other exceptions propagate.
    """
    workers = max(1, int(workers))
    todo = iter(paths)
    pending: dict[Future[ParsedManual], Path] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pdf-parse") as pool:
        try:
            while True:
                while len(pending) < 2 * workers:
                    nxt = next(todo, None)
                    if nxt is None:
                        break
                    pending[pool.submit(parse_pdf, Path(nxt), limits)] = Path(nxt)
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    path = pending.pop(future)
                    error = future.exception()
                    if error is None:
                        yield path, future.result()
                    elif isinstance(error, IngestError):
                        yield path, error
                    else:
                        raise error
        finally:
            for future in pending:
                future.cancel()


@overload
def _run_worker(path: Path, limits: ParseLimits, labels_only: Literal[False] = False) -> Parsed: ...
@overload
def _run_worker(path: Path, limits: ParseLimits, labels_only: Literal[True]) -> Labels: ...


def _run_worker(path: Path, limits: ParseLimits, labels_only: bool = False) -> Parsed | Labels:
    """The worker's answer ("ok" of its JSON line: ingest.pdf's Parsed, or Labels with labels_only)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    # Both ends are close-on-exec here, so no other child inherits the write end and keeps it open.
    lifeline_read, lifeline_write = os.pipe()
    wall_s = WALL_FACTOR * limits.timeout_s
    # The worker's own --timeout-s is the last wall-clock backstop: it only matters once this process is
    # gone, so it allows every period a starved worker may be given (ingest.child_wait).
    command = [sys.executable, "-m", "ingest.pdf", "--max-pages", str(int(limits.max_pages)),
               "--memory-mb", str(int(limits.memory_mb)), "--timeout-s", f"{wall_s * MAX_PERIODS:g}",
               "--parent-pid", str(os.getpid()), "--lifeline-fd", str(lifeline_read),
               *(["--labels-only"] if labels_only else []),
               *([] if limits.drop_drawings else ["--keep-drawings"]), *_ocr_args(limits), str(path.resolve())]
    if limits.timeout_s > 0 and _HAS_RLIMIT:
        command = [sys.executable, "-I", "-S", "-c", _START_LIMITED, str(cpu_seconds(limits)), *command[1:]]
    try:
        # a worker still using CPU at the backstop is starved by a busy box, not stuck: it gets more time
        proc = run_child(command, wall_s if wall_s > 0 else 1e9, env=env, stdin=subprocess.DEVNULL,
                         cwd=_PACKAGE_ROOT, pass_fds=(lifeline_read,))
    except subprocess.TimeoutExpired:  # run_child has already killed and reaped the child
        raise IngestError(wall_message(limits)) from None
    finally:
        os.close(lifeline_read)
        os.close(lifeline_write)
    try:
        reply = json.loads(proc.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        reply = None
    if isinstance(reply, dict) and isinstance(reply.get("ok"), dict):
        parsed: Parsed | Labels = reply["ok"]  # what ingest.pdf.main printed, read back from JSON
        return parsed
    if isinstance(reply, dict) and "error" in reply:
        raise IngestError(str(reply["error"]))
    raise IngestError(_crash_reason(proc, limits))


def _ocr_args(limits: ParseLimits) -> list[str]:
    """The worker's OCR settings (ingest.ocr): it reads pages without a text layer itself."""
    return ["--ocr", limits.ocr, "--ocr-languages", "+".join(limits.ocr_languages),
            "--ocr-dpi", str(int(limits.ocr_dpi)), "--ocr-timeout-s", f"{limits.ocr_page_timeout_s:g}",
            "--ocr-max-pixels", str(int(limits.ocr_max_pixels)),
            "--ocr-min-confidence", f"{limits.ocr_min_confidence:g}"]


def cpu_seconds(limits: ParseLimits) -> int:
    """The CPU limit as the kernel applies it: whole seconds, at least 1."""
    return max(1, math.ceil(limits.timeout_s))


def cpu_message(limits: ParseLimits) -> str:
    return (f"parsing took longer than {cpu_seconds(limits)} s of CPU time and was stopped "
            "(ingest.timeout_s, counted in CPU-seconds)")


def wall_message(limits: ParseLimits) -> str:
    return (f"parsing was not finished after {WALL_FACTOR * limits.timeout_s:g} s of wall-clock time and was "
            f"stopped: the parser is stuck, or the box is overloaded (the backstop, {WALL_FACTOR} x ingest.timeout_s)")


def _crash_reason(proc: subprocess.CompletedProcess[bytes], limits: ParseLimits) -> str:
    """Why a worker died without answering (killed by the OOM killer, crashed in C code...)."""
    stderr = proc.stderr.decode("utf-8", "replace")
    if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
        return memory_message(limits.memory_mb)
    if proc.returncode == -signal.SIGALRM:  # the worker's own wall-clock backstop fired
        return wall_message(limits)
    if _HAS_RLIMIT and proc.returncode == -signal.SIGXCPU:  # the kernel's CPU limit (RLIMIT_CPU)
        return cpu_message(limits)
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        if name == "SIGKILL":
            return f"the parser was killed ({name}), probably for using too much memory"
        return f"the parser crashed ({name}) on this file"
    last = (stderr.strip().splitlines() or ["no output"])[-1][:200]
    return f"the parser failed (exit {proc.returncode}: {last})"
