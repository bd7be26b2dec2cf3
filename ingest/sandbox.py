"""Parse PDFs in a separate, capped process so that a hostile or broken file fails alone.

Each parse runs `python -m ingest.pdf` in a fresh child process. The child caps its own address
space (RLIMIT_AS = limits.memory_mb) and the page count; this side checks size and header first,
kills the child when limits.timeout_s passes, and turns every failure into one IngestError line
that names the file. pypdf's own decompression limits stay on inside the child.

If this process is killed (kill -9 of `manualqa ingest` or of the server) it cannot kill the
child, so the child is told this process's pid and given the read end of a pipe whose write end
only this process holds; it exits when either says the parent is gone, and it also stops itself
after limits.timeout_s (ingest.worker_limits: die_with_parent, limit_time).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from ingest.discover import sha256_file
from ingest.models import IngestError, PageText, ParsedManual, ParseLimits
from ingest.pdf import check_file, memory_message

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])


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
    )


def _page(row: list[Any]) -> PageText:
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


def _run_worker(path: Path, limits: ParseLimits, labels_only: bool = False) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    # Both ends are close-on-exec here, so no other child inherits the write end and keeps it open.
    lifeline_read, lifeline_write = os.pipe()
    command = [sys.executable, "-m", "ingest.pdf", "--max-pages", str(int(limits.max_pages)),
               "--memory-mb", str(int(limits.memory_mb)), "--timeout-s", f"{limits.timeout_s:g}",
               "--parent-pid", str(os.getpid()), "--lifeline-fd", str(lifeline_read),
               *(["--labels-only"] if labels_only else []),
               *([] if limits.drop_drawings else ["--keep-drawings"]), str(path.resolve())]
    try:
        proc = subprocess.run(command, capture_output=True, timeout=limits.timeout_s, env=env,
                              stdin=subprocess.DEVNULL, cwd=_PACKAGE_ROOT, check=False,
                              pass_fds=(lifeline_read,))
    except subprocess.TimeoutExpired:  # subprocess.run has already killed and reaped the child
        raise IngestError(_timeout_message(limits)) from None
    finally:
        os.close(lifeline_read)
        os.close(lifeline_write)
    try:
        reply = json.loads(proc.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        reply = None
    if isinstance(reply, dict) and "ok" in reply:
        return reply["ok"]
    if isinstance(reply, dict) and "error" in reply:
        raise IngestError(str(reply["error"]))
    raise IngestError(_crash_reason(proc, limits))


def _timeout_message(limits: ParseLimits) -> str:
    return f"parsing took longer than {limits.timeout_s:g} s and was stopped (ingest.timeout_s)"


def _crash_reason(proc: subprocess.CompletedProcess[bytes], limits: ParseLimits) -> str:
    """Why a worker died without answering (killed by the OOM killer, crashed in C code...)."""
    stderr = proc.stderr.decode("utf-8", "replace")
    if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
        return memory_message(limits.memory_mb)
    if proc.returncode == -signal.SIGALRM:  # the worker's own wall-clock limit fired first
        return _timeout_message(limits)
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
