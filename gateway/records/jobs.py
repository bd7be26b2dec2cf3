"""Background jobs (ingest of an upload, removal of a manual): one worker, progress in gateway.db.

Ingest jobs run one after another so that two builds never race for the ACTIVE pointer.

A job's row outlives the process but its work does not: after a crash (kill -9, power loss) no
one will ever finish a queued or running job. The JobRunner built at server start claims the data
directory's jobs (an exclusive flock on ``.jobs.lock``, held for the process's life, so a second
`manualqa serve` on the same data cannot fail the first one's live jobs) and then runs
recover_interrupted: unfinished jobs become failed with the reason, and the temporaries they leave
(upload spool folders, half-built index versions) are removed.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import queue
import shutil
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from gateway.records.db import new_id, opened, utcnow

if TYPE_CHECKING:
    from sqlite_utils import Database

# A job's work: given progress(stage, done, total), it returns its result (a JSON object, kept in the row)
Work = Callable[[Callable[[str, int, int], None]], dict[str, object]]


class JobRow(TypedDict):
    """One row of the `jobs` table, `result` decoded (GET /api/v1/jobs/{id}: web.responses_admin.Job)."""

    id: str
    kind: str
    state: str
    progress: int
    total: int | None
    message: str
    created: str
    updated: str
    result: dict[str, object] | None

INTERRUPTED = "interrupted: the server stopped before this job finished (restart at {time})"
UPLOADS_DIR = "uploads"  # <data_dir>/uploads/<random>/: uploads spooled by the web upload route
JOBS_LOCK = ".jobs.lock"

log = logging.getLogger("manualqa.jobs")


@dataclass
class Recovery:
    """What recover_interrupted did, for the log and for tests."""

    failed_jobs: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # temporaries left alone, and why

    def summary(self) -> str:
        parts = [f"{len(self.failed_jobs)} unfinished job(s) marked failed"
                 + (f" ({', '.join(self.failed_jobs)})" if self.failed_jobs else "")]
        if self.removed:
            parts.append("removed " + ", ".join(str(p) for p in self.removed))
        parts += self.kept
        return "; ".join(parts)


def recover_interrupted(data_dir: Path, db_path: Path | None = None) -> Recovery:
    """Fail the jobs a dead server left queued or running and remove their temporary files.

    Call it only from the process that owns the data directory's jobs (JobRunner does, after
    claiming JOBS_LOCK): the upload spool belongs to the server alone. Half-built index versions
    are removed only under the index store's own lock, so a CLI ingest running now keeps its
    build dir (its next ingest clears any leftovers itself).
    """
    data_dir = Path(data_dir)
    recovery = Recovery()
    now = utcnow()
    reason = INTERRUPTED.format(time=now)
    with opened(db_path or data_dir / "gateway.db") as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            rows = db.execute("SELECT id, message FROM jobs WHERE state IN ('queued', 'running') "
                              "ORDER BY id").fetchall()
            for job_id, last in rows:
                message = f"{reason}; last step: {last}" if last else reason
                db.execute("UPDATE jobs SET state = 'failed', message = ?, updated = ? WHERE id = ?",
                           [message, now, job_id])
                recovery.failed_jobs.append(job_id)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    uploads = data_dir / UPLOADS_DIR
    if uploads.is_dir():
        for path in sorted(uploads.iterdir()):
            try:  # a leftover that cannot be removed is reported, never a reason not to start
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except OSError as exc:
                recovery.kept.append(f"could not remove {path}: {exc}")
            else:
                recovery.removed.append(path)
    _remove_index_temporaries(data_dir, recovery)
    return recovery


def _remove_index_temporaries(data_dir: Path, recovery: Recovery) -> None:
    """The index store's own leftover cleanup, under its lock (the one a CLI ingest holds)."""
    from retrieval.types import RetrievalError
    from retrieval.versions import IndexStore

    try:
        recovery.removed += IndexStore(data_dir).clean_leftovers()
    except RetrievalError:
        recovery.kept.append(f"kept the index temporaries: an ingest holds the index lock on {data_dir}")
    except OSError as exc:
        recovery.kept.append(f"could not remove every index temporary: {exc}")


def _claim_jobs(data_dir: Path) -> int | None:
    """An fd holding JOBS_LOCK exclusively, or None when another live process holds it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_dir / JOBS_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class JobRunner:
    def __init__(self, db_path: Path, on_done: Callable[[], None] | None = None, recover: bool = True) -> None:
        """A runner for the jobs in db_path; with recover, first fail what a crashed server left."""
        self.db_path = db_path
        self.on_done = on_done
        self._queue: queue.Queue[tuple[str, Work]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.recovery: Recovery | None = None
        self._release: Callable[[], None] = lambda: None
        if recover:
            self._recover_once(Path(db_path).parent)

    def _recover_once(self, data_dir: Path) -> None:
        fd = _claim_jobs(data_dir)
        if fd is None:
            log.warning("another manualqa server is using %s: its unfinished jobs are left as they are", data_dir)
            return
        self._release = weakref.finalize(self, os.close, fd)
        self.recovery = recover_interrupted(data_dir, self.db_path)
        if self.recovery.failed_jobs or self.recovery.removed or self.recovery.kept:
            log.warning("recovered after an unclean stop: %s", self.recovery.summary())

    def close(self) -> None:
        """Give up the claim on the data directory's jobs (a process exit does the same)."""
        self._release()

    def submit(self, kind: str, work: Work, message: str = "") -> str:
        job_id = new_id()
        now = utcnow()
        with opened(self.db_path) as db:
            db.table("jobs").insert({"id": job_id, "kind": kind, "state": "queued", "progress": 0, "total": None,
                               "message": message, "created": now, "updated": now, "result": None})
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="manualqa-jobs", daemon=True)
                self._thread.start()
        self._queue.put((job_id, work))
        return job_id

    def get(self, job_id: str) -> JobRow | None:
        with opened(self.db_path) as db:
            rows = list(db["jobs"].rows_where("id = ?", [job_id]))
        if not rows:
            return None
        row = rows[0]
        return JobRow(id=row["id"], kind=row["kind"], state=row["state"], progress=row["progress"],
                      total=row["total"], message=row["message"], created=row["created"], updated=row["updated"],
                      result=json.loads(row["result"]) if row["result"] else None)

    def _update(self, db: Database, job_id: str, **fields: object) -> None:
        fields["updated"] = utcnow()
        db.table("jobs").update(job_id, fields)

    def _loop(self) -> None:
        with opened(self.db_path) as db:  # this worker thread's own connection, for its lifetime
            self._work(db)

    def _work(self, db: Database) -> None:
        while True:
            job_id, work = self._queue.get()
            self._update(db, job_id, state="running")
            last = [0.0]

            def progress(stage: str, done: int, total: int, _id: str = job_id,
                         last: list[float] = last) -> None:
                now = time.monotonic()
                if now - last[0] > 0.25 or done >= total:
                    last[0] = now
                    self._update(db, _id, progress=done, total=total, message=stage)

            try:
                result = work(progress)
                row = self.get(job_id)
                total = (row["total"] if row else None) or 1  # a job with nothing to do still ends at 100 %
                self._update(db, job_id, state="done", message="done", progress=total, total=total,
                             result=json.dumps(result, default=str))
            except Exception as exc:  # the job fails alone; the server and index are untouched
                self._update(db, job_id, state="failed", message=str(exc) or type(exc).__name__)
            if self.on_done:
                self.on_done()
