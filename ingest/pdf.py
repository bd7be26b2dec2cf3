"""PDF -> normalised page texts and a title. This runs inside the sandboxed worker process.

`python -m ingest.pdf --max-pages N --memory-mb M FILE` caps its own address space, parses FILE
with pypdf and writes one JSON object to stdout: {"ok": {...}} or {"error": "reason"}. The parent
(ingest.sandbox) adds the file name, the hash and the size, and enforces the wall-clock limit.
Error reasons are short, user-facing and never name the file (the parent does).

A worker never outlives its parent: killed with -9, the parent cannot stop it, so the worker
watches for itself (`--parent-pid`, `--lifeline-fd`, see die_with_parent) and also ends itself
after `--timeout-s`, the limit its parent applies.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import re
import select
import signal
import sys
import threading
import unicodedata
from pathlib import Path
from typing import Any

from ingest.models import IngestError

ORPHANED_EXIT = 3  # exit status of a worker that found its parent gone (nobody is left to read it)
_WATCH_INTERVAL_S = 0.25
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
MIN_TEXT_CHARS = 20  # a page with fewer non-space characters counts as having no text
NO_TEXT_MESSAGE = "no text layer on any page (scanned? OCR is not supported)"
_HEAD_BYTES = 1024
_TAIL_BYTES = 4096

_CHAR_MAP = str.maketrans({
    "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
    "\ufb06": "st", "\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u200b": "", "\ufeff": "",
    "\t": " ", "\f": "\n", "\x00": "",
    # Bullets drawn from the Symbol/Wingdings fonts land in the private use area.
    "\uf0b7": "•", "\uf0a7": "▪", "\uf076": "•", "\uf0d8": "•", "\uf0fc": "✓", "\uf06e": "■",
})
_LEADER_DOTS = re.compile(r"(?:\s?[.·…]){5,}\s?")
_SPACE_RUN = re.compile(r"[ \u2000-\u200a\u205f\u3000]+")
_LINE_END_HYPHEN = re.compile(r"([a-z])-\n([a-z]+)( ?)")
_BLANK_RUNS = re.compile(r"\n{3,}")
_BAD_TITLE = re.compile(
    r"^(untitled.*|title|document\d*|slide \d+|powerpoint presentation|microsoft (word|powerpoint) - .*"
    r"|.*\.(docx?|odt|rtf|txt|pdf|indd|qxd|pptx?|xlsx?|tex|dvi|ps|ai|eps))$",
    re.IGNORECASE,
)


def check_file(path: Path, max_file_mb: float) -> int:
    """Cheap checks that need no parser; returns the size in bytes or raises IngestError."""
    if not path.exists():
        raise IngestError("no such file")
    if not path.is_file():
        raise IngestError("not a regular file")
    size = path.stat().st_size
    if size == 0:
        raise IngestError("empty file (0 bytes), not a PDF")
    if size > max_file_mb * 1024 * 1024:
        raise IngestError(f"file is {size / 1048576:.1f} MB, over the {max_file_mb:g} MB limit "
                          "(ingest.max_file_mb)")
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
    if b"%PDF-" not in head:
        raise IngestError("not a PDF file (no %PDF header at the start)")
    if b"%%EOF" not in tail:
        raise IngestError("PDF is truncated or damaged (no %EOF end marker); re-download or re-export it")
    return size


def normalise_text(raw: str) -> str:
    """Make extracted text searchable and quotable: fix ligatures, join hyphenated words, tidy spaces.

    Line breaks are kept (the chunker uses them to find headings and paragraphs).
    """
    text = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\u00ad\n", "-\n").replace("\u00ad", "")
    text = unicodedata.normalize("NFC", text).translate(_CHAR_MAP)
    text = "\n".join(_SPACE_RUN.sub(" ", line).strip() for line in text.split("\n"))

    def join(match: re.Match[str]) -> str:
        rest = match.string[match.end():match.end() + 1]
        return match.group(1) + match.group(2) + ("" if rest in ("", "\n") else "\n")

    text = _LINE_END_HYPHEN.sub(join, text)
    text = _LEADER_DOTS.sub(" ... ", text)  # table-of-contents dot leaders
    return _BLANK_RUNS.sub("\n\n", text).strip()


def meaningful_title(candidate: str | None) -> str:
    """The candidate tidied, or "" when it says nothing (empty, 'Untitled', a file name...)."""
    if not candidate:
        return ""
    title = _SPACE_RUN.sub(" ", str(candidate).replace("\n", " ").replace("\x00", "")).strip(" -_:;,")
    if sum(ch.isalpha() for ch in title) < 3 or len(title) > 200 or _BAD_TITLE.match(title):
        return ""
    return title


def _looks_like_title_line(line: str) -> bool:
    letters = sum(ch.isalpha() for ch in line)
    return (letters >= 3 and len(line) <= 100 and not line.endswith((".", ",", ";"))
            and "@" not in line and "://" not in line and "...." not in line)


def choose_title(meta_title: Any, big_text: str, page1_text: str, stem: str) -> str:
    """Metadata title if meaningful, else page 1's largest text, else its first title-like line."""
    title = meaningful_title(meta_title)
    if title:
        return title
    if big_text and len(big_text) <= 150:
        title = meaningful_title(big_text)
        if title:
            return title
    for line in page1_text.split("\n")[:15]:
        if _looks_like_title_line(line.strip()):
            return line.strip()
    return stem.replace("_", " ").strip() or stem


def _largest_text(runs: list[tuple[float, str]]) -> str:
    """Text set in the largest font on a page (usually the title on a cover page)."""
    runs = [(size, text) for size, text in runs if text.strip()]
    if not runs:
        return ""
    top = max(size for size, _ in runs)
    return " ".join(" ".join(text.split()) for size, text in runs if size >= 0.9 * top).strip()


def _decrypt(reader: Any) -> None:
    """Open PDFs that only carry an owner password (print/copy restrictions); refuse real passwords."""
    from pypdf.errors import DependencyError

    try:
        ok = reader.decrypt("")
    except DependencyError:
        raise IngestError("PDF is encrypted with AES and needs the 'cryptography' package "
                          "(pip install cryptography)") from None
    except Exception:  # noqa: BLE001 - a broken encryption dictionary is a broken file
        ok = 0
    if not ok:
        raise IngestError("PDF is password protected (encrypted); remove the password and ingest it again")


def extract(path: Path, max_pages: int) -> dict[str, Any]:
    """Parse the PDF; returns title, page_count, pages [(number, text)], pages_without_text."""
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    try:
        reader = PdfReader(str(path), strict=False)
        if reader.is_encrypted:
            _decrypt(reader)
        page_count = len(reader.pages)
        meta_title = (reader.metadata or {}).get("/Title")
    except (IngestError, MemoryError):
        raise
    except LimitReachedError:
        raise IngestError("PDF holds data that expands beyond the parser's safety limits "
                          "(possible decompression bomb)") from None
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for broken files
        raise IngestError(f"PDF is malformed and cannot be read ({_brief(exc)})") from None
    if page_count == 0:
        raise IngestError("PDF has no pages")
    if page_count > max_pages:
        raise IngestError(f"PDF has {page_count} pages, over the {max_pages}-page limit (ingest.max_pages)")

    runs: list[tuple[float, str]] = []

    def collect(text: str, cm: list[float], tm: list[float], _font: Any, size: float) -> None:
        scale = math.sqrt(abs(tm[0] * tm[3] - tm[1] * tm[2]) * abs(cm[0] * cm[3] - cm[1] * cm[2]))
        runs.append((round(float(size) * scale, 1), text))

    pages: list[tuple[int, str]] = []
    failed = 0
    for number in range(1, page_count + 1):
        try:
            raw = reader.pages[number - 1].extract_text(visitor_text=collect if number == 1 else None)
        except MemoryError:
            raise
        except LimitReachedError:
            raise IngestError(f"page {number} holds data that expands beyond the parser's safety limits "
                              "(possible decompression bomb)") from None
        except Exception:  # noqa: BLE001 - one unreadable page should not sink the manual
            raw, failed = "", failed + 1
        pages.append((number, normalise_text(raw or "")))

    without = [n for n, text in pages if sum(not ch.isspace() for ch in text) < MIN_TEXT_CHARS]
    if failed == page_count:
        raise IngestError("PDF is malformed: no page could be read")
    if len(without) == page_count:
        raise IngestError(NO_TEXT_MESSAGE)
    title = choose_title(meta_title, _largest_text(runs), pages[0][1], path.stem)
    return {"title": title, "page_count": page_count, "pages": pages, "pages_without_text": without}


def memory_message(memory_mb: int) -> str:
    return (f"parsing needed more than the {memory_mb} MB memory limit and was stopped "
            "(ingest.memory_mb)")


def _brief(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:160]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _limit_memory(memory_mb: int) -> None:
    try:
        import resource
    except ImportError:  # not a POSIX system: only the wall-clock limit applies
        return
    cap = int(memory_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def die_with_parent(parent_pid: int, lifeline_fd: int | None) -> None:
    """End this worker within ~0.25 s of its parent's death, however the parent died.

    Three independent signs, because each alone has a gap: the lifeline pipe (its write end lives
    only in the parent, so EOF means the parent is gone), the parent pid (re-parenting changes
    getppid()), and PR_SET_PDEATHSIG, which needs no Python thread to run but fires when the
    parent's forking *thread* ends (the server forks from pool threads), so it is never relied on
    alone. The watch runs in a daemon thread so a parse in progress does not delay it.
    """
    _kill_on_parent_death()
    if os.getppid() != parent_pid:  # the parent died before we could watch it
        os._exit(ORPHANED_EXIT)

    def watch() -> None:
        while True:
            if lifeline_fd is None:
                threading.Event().wait(_WATCH_INTERVAL_S)
            else:
                readable, _, _ = select.select([lifeline_fd], [], [], _WATCH_INTERVAL_S)
                if readable and not os.read(lifeline_fd, 1):
                    os._exit(ORPHANED_EXIT)
            if os.getppid() != parent_pid:
                os._exit(ORPHANED_EXIT)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _kill_on_parent_death() -> None:
    """prctl(PR_SET_PDEATHSIG, SIGKILL) where the platform has it; a no-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def limit_time(timeout_s: float) -> None:
    """Stop this worker after timeout_s of wall-clock time even if its parent cannot kill it.

    SIGALRM (not caught here, so it terminates the process) at the parent's own limit; an
    RLIMIT_CPU hard cap just above it as a backstop that cannot be caught or ignored.
    """
    if timeout_s <= 0:
        return
    seconds = max(1, math.ceil(timeout_s))
    if hasattr(signal, "alarm"):
        signal.alarm(seconds)
    try:
        import resource
    except ImportError:
        return
    cap = seconds + 2
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or hard > cap:
        resource.setrlimit(resource.RLIMIT_CPU, (cap, cap))


def main(argv: list[str] | None = None) -> int:
    """Worker entry point; stdout carries exactly one JSON object (pypdf's chatter goes to stderr)."""
    parser = argparse.ArgumentParser(prog="python -m ingest.pdf")
    parser.add_argument("--max-pages", type=int, default=2000)
    parser.add_argument("--memory-mb", type=int, default=0, help="address-space cap; 0 = none")
    parser.add_argument("--timeout-s", type=float, default=0.0, help="wall-clock cap; 0 = none")
    parser.add_argument("--parent-pid", type=int, default=0,
                        help="exit when this process is gone (default: the parent at start)")
    parser.add_argument("--lifeline-fd", type=int, default=None,
                        help="read end of a pipe the parent holds open; EOF means the parent died")
    parser.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    die_with_parent(args.parent_pid or os.getppid(), args.lifeline_fd)
    limit_time(args.timeout_s)
    out, sys.stdout = sys.stdout, sys.stderr
    try:
        os.nice(19)  # parsing yields the CPU to embedding and to the gateway answering questions
    except (AttributeError, OSError):
        pass
    try:
        if args.memory_mb > 0:
            _limit_memory(args.memory_mb)
        result: dict[str, Any] = {"ok": extract(args.path, args.max_pages)}
    except IngestError as exc:
        result = {"error": str(exc)}
    except MemoryError:
        result = {"error": memory_message(args.memory_mb)}
    except RecursionError:
        result = {"error": "PDF is malformed and cannot be read (structure nested too deeply)"}
    out.write(json.dumps(result))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
