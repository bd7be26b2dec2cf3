"""Background jobs (ingest of an upload, removal of a manual): one worker, progress in gateway.db.

Ingest jobs run one after another so that two builds never race for the ACTIVE pointer.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.db import connect, new_id, utcnow

Work = Callable[[Callable[[str, int, int], None]], dict[str, Any]]


class JobRunner:
    def __init__(self, db_path: Path, on_done: Callable[[], None] | None = None) -> None:
        self.db_path = db_path
        self.on_done = on_done
        self._queue: queue.Queue[tuple[str, Work]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, kind: str, work: Work, message: str = "") -> str:
        job_id = new_id()
        now = utcnow()
        connect(self.db_path)["jobs"].insert({"id": job_id, "kind": kind, "state": "queued", "progress": 0,
                                              "total": None, "message": message, "created": now,
                                              "updated": now, "result": None})
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="manualqa-jobs", daemon=True)
                self._thread.start()
        self._queue.put((job_id, work))
        return job_id

    def get(self, job_id: str) -> dict[str, Any] | None:
        rows = list(connect(self.db_path)["jobs"].rows_where("id = ?", [job_id]))
        if not rows:
            return None
        row = dict(rows[0])
        row["result"] = json.loads(row["result"]) if row["result"] else None
        return row

    def _update(self, db: Any, job_id: str, **fields: Any) -> None:
        fields["updated"] = utcnow()
        db["jobs"].update(job_id, fields)

    def _loop(self) -> None:
        db = connect(self.db_path)
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
                row = self.get(job_id) or {}
                total = row.get("total") or 1  # a job with nothing to do still ends at 100 %
                self._update(db, job_id, state="done", message="done", progress=total, total=total,
                             result=json.dumps(result, default=str))
            except Exception as exc:  # the job fails alone; the server and index are untouched
                self._update(db, job_id, state="failed", message=str(exc) or type(exc).__name__)
            if self.on_done:
                self.on_done()
