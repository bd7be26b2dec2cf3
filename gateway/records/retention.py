"""Retention for the answer log: answers older than log.retention_days go, with their feedback.

Privacy and disk: a gateway that logs every question for years holds more than a site may want.
0 (the default) keeps everything. Deleting happens in small batches, each its own short
transaction, so the answer writer (gateway.records.answers) is never held up for long. Only rows in
gateway.db are deleted: export files an admin downloaded or `manualqa log export` wrote are theirs.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.records.db import iso_utc, opened

if TYPE_CHECKING:
    from gateway.config import Settings
    from gateway.records.answers import AnswerLog

log = logging.getLogger(__name__)
BATCH = 2000
INTERVAL_S = 3600.0  # how often a serving gateway applies the setting again


def cutoff(days: int, now: datetime | None = None) -> str:
    """The ISO time before which answers are deleted with a retention of `days`."""
    return iso_utc((now or datetime.now(timezone.utc)) - timedelta(days=days))


def prune_answers(db_path: str | Path, days: int, now: datetime | None = None) -> int:
    """Delete answers (and their feedback) older than `days` days; returns how many answers went.

    days <= 0 keeps everything. Replay runs keep their own copies of what they asked (replay_items).
    """
    if days <= 0:
        return 0
    before = cutoff(days, now)
    deleted = 0
    with opened(db_path) as db:
        while True:
            with db.conn:
                db.conn.execute("BEGIN IMMEDIATE")
                ids = [r[0] for r in db.conn.execute("SELECT id FROM answers WHERE time < ? LIMIT ?",
                                                     (before, BATCH))]
                if ids:
                    marks = ", ".join("?" for _ in ids)
                    db.conn.execute(f"DELETE FROM feedback WHERE answer_id IN ({marks})", ids)
                    db.conn.execute(f"DELETE FROM answers WHERE id IN ({marks})", ids)
                db.conn.execute("COMMIT")
            deleted += len(ids)
            if len(ids) < BATCH:
                break
    if deleted:
        log.info("answer log retention (%d days): deleted %d answers from before %s", days, deleted, before)
    return deleted


def apply_retention(answers: AnswerLog, days: int) -> int:
    """prune_answers on a log, after its queued rows are written (an old row still queued goes too)."""
    answers.flush()
    return prune_answers(answers.path, days)


@dataclasses.dataclass(frozen=True)
class RetentionChange:
    """What set_retention did: the new and the previous days, the answers it deleted, when it ran."""

    days: int
    previous_days: int
    deleted: int
    ran_at: str


def set_retention(settings: Settings, answers: AnswerLog, days: int) -> RetentionChange:
    """Set the answer log's retention to `days` for this process (settings.log.retention_days; 0: keep every
    answer) and apply it at once: answers older than that go now, with their feedback.

    The one setter: PUT /api/v1/answers/retention (a running server, which then applies it hourly) and
    `manualqa log retention --days N` (a shell, which applies it once) both call it. Neither writes
    manualqa.toml, whose [log] retention_days decides again at a process's next start."""
    if days < 0:
        raise ValueError("retention days must be 0 (keep every answer) or more")
    previous = settings.log.retention_days
    settings.log = dataclasses.replace(settings.log, retention_days=days)
    deleted = apply_retention(answers, days) if days > 0 else 0
    return RetentionChange(days=days, previous_days=previous, deleted=deleted,
                           ran_at=iso_utc(datetime.now(timezone.utc)))


class RetentionTask:
    """Applies the setting at start and then every `interval_s` while the server runs.

    `days` is read each time, so a change on the running server (PUT /api/v1/answers/retention)
    takes effect at the next round, or at once when the caller also runs `run_once`.
    """

    def __init__(self, answers: Callable[[], AnswerLog], days: Callable[[], int],
                 interval_s: float = INTERVAL_S) -> None:
        self._answers, self._days, self.interval_s = answers, days, interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_deleted = 0
        self.last_run: str | None = None

    def ran(self, change: RetentionChange) -> None:
        """Note a run made outside this task (set_retention): what GET /api/v1/answers/retention reports."""
        self.last_deleted, self.last_run = change.deleted, change.ran_at

    def run_once(self) -> int:
        days = self._days()
        self.last_deleted = apply_retention(self._answers(), days) if days > 0 else 0
        self.last_run = iso_utc(datetime.now(timezone.utc))
        return self.last_deleted

    def _loop(self) -> None:
        while True:
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - a locked or full database: try again next round
                log.exception("answer log retention failed; trying again in %g s", self.interval_s)
            if self._stop.wait(self.interval_s):
                return

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="answerlog-retention", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
