"""The answer log: one row per answer in gateway.db, written off the answering thread.

`record()` only puts the row on a queue, so logging never slows a stream; one writer thread
drains it in batches. Nothing is lost: `close()` (also registered with atexit) drains the queue,
reads flush it first so that an answer can be looked up as soon as it is returned, and a row that
SQLite refuses after retries goes to ``gateway.db.unwritten.jsonl`` beside the database.
"""

from __future__ import annotations

import atexit
import io
import json
import logging
import queue
import threading
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any, NamedTuple, TypedDict, cast

from gateway.answer_fields import CLIENTS, OUTCOMES, flag_parts
from gateway.records.answer_filters import LogFilter
from gateway.records.answer_rows import COLUMNS, AnswerLike, LogError, from_row, to_row
from gateway.records.db import opened, utcnow

log = logging.getLogger(__name__)

# An answer as the log gives it back: its columns (JSON columns decoded), its flags structured and its
# feedback; opaque here: gateway.web.responses.AnswerRow types it for the API.
LogRow = dict[str, object]


class Vote(TypedDict):
    """One technician's vote on an answer, as stored in `feedback`."""

    answer_id: str
    thumbs: int
    comment: str
    time: str
    key_name: str | None


class _Item(NamedTuple):
    row: dict[str, object]
    chain: dict[str, object] | None
    done: threading.Event | None  # set once the row is committed, for record(durable=True)


class AnswerLog:
    def __init__(self, db_path: str | Path) -> None:
        self.path = Path(db_path)
        with opened(self.path):  # create and migrate now: a broken database fails at start
            pass
        self._queue: queue.Queue[_Item | None] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        atexit.register(self.close)

    # -- writing -------------------------------------------------------------------------------
    def record(self, result: AnswerLike, chain: dict[str, object] | None = None, durable: bool = False,
               timeout_s: float = 30.0) -> str:
        """Queue one answer (and its artifact chain JSON, stored once per chain id); returns its id.

        durable=True returns only once the row is committed (batched with others by the writer):
        an answer must be in the log before its client is shown it, or a crash in between loses
        an answer somebody acted on. Raises LogError if that did not happen within timeout_s.
        """
        row = to_row(result)
        if not row.get("id") or not row.get("question") or row.get("outcome") not in OUTCOMES:
            raise LogError("an answer row needs an id, a question and an outcome in " + ", ".join(OUTCOMES))
        if row.get("client") not in CLIENTS:
            raise LogError(f"an answer row needs a client in {', '.join(CLIENTS)}, not {row.get('client')!r}")
        with self._lock:
            if self._closed:
                self._write([(row, chain)])  # after close (e.g. during interpreter exit): write inline
                return str(row["id"])
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="answerlog-writer", daemon=True)
                self._thread.start()
            done = threading.Event() if durable else None
            self._queue.put(_Item(row, chain, done))
        if done is not None and not done.wait(timeout_s):
            raise LogError(f"answer {row['id']} was not written within {timeout_s:g} s")
        return str(row["id"])

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            batch = [item]
            while len(batch) < 200:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            items = [b for b in batch if b is not None]
            try:
                if items:
                    self._write([(i.row, i.chain) for i in items])
            finally:
                for item in items:
                    if item.done is not None:
                        item.done.set()  # written (or spilled to the .unwritten.jsonl file)
                for _ in batch:
                    self._queue.task_done()
            if any(b is None for b in batch):
                return

    def _write(self, rows: list[tuple[dict[str, object], dict[str, object] | None]]) -> None:
        for attempt in range(5):
            try:
                with opened(self.path) as db:
                    with db.conn:
                        db.conn.execute("BEGIN IMMEDIATE")
                        for row, chain in rows:
                            if row.get("chain_id"):
                                db.conn.execute(
                                    "INSERT INTO chains (chain_id, json, first_seen) VALUES (?, ?, ?)"
                                    " ON CONFLICT(chain_id) DO UPDATE SET json = excluded.json"
                                    " WHERE chains.json = '{}'",
                                    (row["chain_id"], json.dumps(chain or {}, sort_keys=True, default=str),
                                     utcnow()))
                            cols = ", ".join(COLUMNS)
                            marks = ", ".join("?" for _ in COLUMNS)
                            db.conn.execute(f"INSERT OR REPLACE INTO answers ({cols}) VALUES ({marks})",
                                            [row.get(c) for c in COLUMNS])
                        db.conn.execute("COMMIT")
                return
            except Exception as exc:  # noqa: BLE001 - keep the rows whatever SQLite says
                last = exc
                time.sleep(0.05 * (attempt + 1))
        spill = self.path.with_name(self.path.name + ".unwritten.jsonl")
        log.error("answer log: could not write %d row(s) to %s (%s); kept in %s", len(rows), self.path,
                  last, spill)
        with open(spill, "a", encoding="utf-8") as fh:
            for row, chain in rows:
                fh.write(json.dumps({"row": row, "chain": chain}, default=str) + "\n")

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued row is in the database; False if the timeout passed first."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._queue.all_tasks_done.wait(left)
        return True

    @property
    def pending(self) -> int:
        return self._queue.unfinished_tasks

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            if thread is not None and thread.is_alive():
                self._queue.put(None)
        if thread is not None:
            thread.join(timeout=60)

    # -- reading -------------------------------------------------------------------------------
    def _read(self, sql: str, params: Sequence[object] = ()) -> list[dict[str, Any]]:
        """Rows as SQLite gives them (log_export pages the table with it): the column types are the schema's."""
        self.flush()
        with opened(self.path) as db:
            cur = db.conn.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def get(self, answer_id: str) -> LogRow | None:
        rows = self._read("SELECT * FROM answers WHERE id = ?", (answer_id,))
        if not rows:
            return None
        return self._with_feedback([from_row(rows[0])])[0]

    def _with_feedback(self, rows: list[LogRow]) -> list[LogRow]:
        """Each row gains its flags as {"name", "detail"} (flag_details, as the API answers them) and its
        technicians' feedback, oldest first (what an admin reviews the log for)."""
        by_id: dict[object, list[dict[str, object]]] = {r["id"]: [] for r in rows}
        ids = list(by_id)
        for start in range(0, len(ids), 500):  # SQLite's bound-parameter limit
            part = ids[start:start + 500]
            marks = ", ".join("?" for _ in part)
            for f in self._read(f"SELECT answer_id, thumbs, comment, time, key_name FROM feedback"
                                f" WHERE answer_id IN ({marks}) ORDER BY id", part):
                by_id[f.pop("answer_id")].append(f)
        for r in rows:
            r["flag_details"] = [flag_parts(f) for f in cast("list[str]", r.get("flags") or [])]
            r["feedback"] = by_id[r["id"]]
        return rows

    def chain(self, chain_id: str) -> dict[str, object] | None:
        rows = self._read("SELECT json, first_seen FROM chains WHERE chain_id = ?", (chain_id,))
        if not rows:
            return None
        return {**json.loads(rows[0]["json"]), "chain_id": chain_id, "first_seen": rows[0]["first_seen"]}

    def _where(self, since: str | datetime | None, outcome: str | None, client: str | None,
               until: str | datetime | None = None, manual: str | None = None) -> tuple[str, list[object]]:
        return LogFilter(since=since, until=until, outcome=outcome, client=client, manual=manual).where()

    def query(self, since: str | datetime | None = None, outcome: str | None = None,
              client: str | None = None, limit: int = 50, offset: int = 0,
              until: str | datetime | None = None, manual: str | None = None) -> list[LogRow]:
        """Newest first; the filters are gateway.records.answer_filters.LogFilter's."""
        if not (0 <= limit <= 2**62 and 0 <= offset <= 2**62):  # SQLite integers are 64-bit
            raise LogError("limit and offset must be between 0 and 2^62")
        where, params = self._where(since, outcome, client, until, manual)
        rows = self._read(f"SELECT * FROM answers{where} ORDER BY id DESC LIMIT ? OFFSET ?",
                          [*params, limit, offset])
        return self._with_feedback([from_row(r) for r in rows])

    def count(self, since: str | datetime | None = None, outcome: str | None = None,
              client: str | None = None, until: str | datetime | None = None, manual: str | None = None) -> int:
        where, params = self._where(since, outcome, client, until, manual)
        return int(self._read(f"SELECT count(*) AS n FROM answers{where}", params)[0]["n"])

    def export(self, fmt: str, out: IO[str], since: str | datetime | None = None,
               outcome: str | None = None, client: str | None = None, until: str | datetime | None = None,
               manual: str | None = None) -> int:
        """Every matching row, oldest first, as JSON lines or CSV (gateway.records.log_export); the filters
        are LogFilter's."""
        from gateway.records.log_export import write_export

        return write_export(self, fmt, out, since=since, outcome=outcome, client=client, until=until, manual=manual)

    def export_text(self, fmt: str, since: str | datetime | None = None, outcome: str | None = None,
                    client: str | None = None, until: str | datetime | None = None, manual: str | None = None) -> str:
        buf = io.StringIO()
        self.export(fmt, buf, since=since, outcome=outcome, client=client, until=until, manual=manual)
        return buf.getvalue()

    # -- feedback ------------------------------------------------------------------------------
    def add_feedback(self, answer_id: str, thumbs: int, comment: str = "",
                     key_name: str | None = None) -> Vote:
        comment = _checked_vote(thumbs, comment or "") or ""
        self.flush()
        with opened(self.path) as db:
            if db.conn.execute("SELECT 1 FROM answers WHERE id = ?", (answer_id,)).fetchone() is None:
                raise LogError(f"no answer with id {answer_id!r}")
            entry: Vote = {"answer_id": answer_id, "thumbs": thumbs, "comment": comment, "time": utcnow(),
                           "key_name": key_name}
            with db.conn:
                db.conn.execute("INSERT INTO feedback (answer_id, thumbs, comment, time, key_name)"
                                " VALUES (:answer_id, :thumbs, :comment, :time, :key_name)", entry)
            return entry

    def set_vote(self, answer_id: str, thumbs: int, comment: str | None = None,
                 key_name: str | None = None) -> Vote:
        """One current vote per answer per client (API key name; None for an anonymous reader): a
        later vote replaces that client's earlier one (the latest vote counts), and a comment of None
        keeps the comment already given, so that changing the vote never loses it. Feedback rows written
        before this (add_feedback appends) stay; the newest row of a client is the one updated."""
        comment = _checked_vote(thumbs, comment)
        self.flush()
        with opened(self.path) as db:
            if db.conn.execute("SELECT 1 FROM answers WHERE id = ?", (answer_id,)).fetchone() is None:
                raise LogError(f"no answer with id {answer_id!r}")
            with db.conn:
                mine = db.conn.execute("SELECT id, comment FROM feedback WHERE answer_id = ? AND key_name IS ?"
                                       " ORDER BY id DESC LIMIT 1", (answer_id, key_name)).fetchone()
                entry: Vote = {"answer_id": answer_id, "thumbs": thumbs,
                         "comment": comment if comment is not None else (mine[1] if mine else ""),
                         "time": utcnow(), "key_name": key_name}
                if mine is None:
                    db.conn.execute("INSERT INTO feedback (answer_id, thumbs, comment, time, key_name)"
                                    " VALUES (:answer_id, :thumbs, :comment, :time, :key_name)", entry)
                else:
                    db.conn.execute("UPDATE feedback SET thumbs = :thumbs, comment = :comment, time = :time"
                                    " WHERE id = :id", {**entry, "id": mine[0]})
            return entry


def _checked_vote(thumbs: int, comment: str | None) -> str | None:
    """A vote's thumbs and comment as stored (the comment stripped; None stays None), or LogError."""
    if thumbs not in (1, -1):
        raise LogError("thumbs must be +1 or -1")
    if comment is not None:
        comment = comment.strip()
        if len(comment) > 2000:
            raise LogError("comment is longer than 2000 characters")
    return comment
