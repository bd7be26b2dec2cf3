"""The answer log as a file (JSON lines or CSV): `manualqa log export` and GET /api/v1/answers/export.

Both call `export_chunks`; the CLI writes the chunks to a file (`write_export`, which
`AnswerLog.export` is), the web streams them to a browser. Rows are read a page at a time, keyed
on their time-ordered ids, so memory stays bounded whatever the size of the log, and each page
opens its own connection, so the chunks may be drawn from any thread (Litestar draws a sync
iterator's items in worker threads).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import IO, TYPE_CHECKING

from gateway.records.answer_rows import COLUMNS, LogError, from_row

if TYPE_CHECKING:
    from gateway.records.answers import AnswerLog

FORMATS = ("jsonl", "csv")
MEDIA_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}
PAGE_ROWS = 500


def export_chunks(log: AnswerLog, fmt: str, since: str | datetime | None = None, outcome: str | None = None,
                  client: str | None = None, page_rows: int = PAGE_ROWS, until: str | datetime | None = None,
                  manual: str | None = None) -> Iterator[tuple[str, int]]:
    """The export as (text, rows in it) chunks, oldest row first.

    The format and filters are checked now, before the first chunk, so that a bad `since` is an
    error the caller can answer with (a 400), not a download that breaks off. The export ends at
    the newest matching row that existed when it was called.
    """
    if fmt not in FORMATS:
        raise LogError(f"export format must be jsonl or csv, not {fmt!r}")
    if page_rows < 1:
        raise LogError("page_rows must be at least 1")
    where, params = log._where(since, outcome, client, until, manual)  # the log's own filter (answer_filters)
    newest = log._read(f"SELECT max(id) AS id FROM answers{where}", params)[0]["id"]
    return _pages(log, fmt, where, params, newest, page_rows)


def _pages(log: AnswerLog, fmt: str, where: str, params: list[object], newest: str | None,
           page_rows: int) -> Iterator[tuple[str, int]]:
    if fmt == "csv":
        head = io.StringIO()
        csv.DictWriter(head, fieldnames=list(COLUMNS)).writeheader()
        yield head.getvalue(), 0
    after = ""
    clause = f"{where} AND" if where else " WHERE"
    while newest is not None and after < newest:
        rows = log._read(f"SELECT * FROM answers{clause} id > ? AND id <= ? ORDER BY id LIMIT ?",
                         [*params, after, newest, page_rows])
        if not rows:
            return
        after = rows[-1]["id"]
        buf = io.StringIO()
        if fmt == "jsonl":
            for r in rows:
                buf.write(json.dumps(from_row(r), ensure_ascii=False, default=str) + "\n")
        else:  # JSON columns stay JSON text in their cells
            writer = csv.DictWriter(buf, fieldnames=list(COLUMNS), extrasaction="ignore")
            for r in rows:
                writer.writerow(r)
        yield buf.getvalue(), len(rows)


def write_export(log: AnswerLog, fmt: str, out: IO[str], since: str | datetime | None = None,
                 outcome: str | None = None, client: str | None = None, until: str | datetime | None = None,
                 manual: str | None = None) -> int:
    """Write the whole export to `out`; returns the number of answers written."""
    n = 0
    for text, rows in export_chunks(log, fmt, since=since, outcome=outcome, client=client, until=until,
                                    manual=manual):
        out.write(text)
        n += rows
    return n


def export_file_name(fmt: str, since: str | None = None, outcome: str | None = None, now: str = "") -> str:
    """A download's name that says what it holds: manualqa-answers[-outcome][-since-X]-TIME.jsonl.

    Several outcomes (the admin page's boxes: outcome=a,b) are joined by "+": no comma in a file name.
    """
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in (since or "").strip())[:32]
    stamp = "".join(c for c in now if c.isalnum())[:15]
    outcomes = "+".join(o for o in (outcome or "").split(",") if o.isidentifier())
    parts = ["manualqa-answers", outcomes, f"since-{safe}" if safe else "", stamp]
    return "-".join(p for p in parts if p) + f".{fmt}"
