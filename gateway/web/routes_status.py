"""GET /api/v1/admin/status: the system's state in one object for the admin page (issue 48, item 9).

What /health, /metrics and /api/v1/deployment each say in part (runtime state and worker, queue,
index version, answers per outcome), with what none of them says: disk free under the data
directory, this process's memory and the answer log's size. Nothing new is probed: /proc, statvfs
and the parts the gateway already holds.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from litestar import Controller, get
from litestar.concurrency import sync_to_thread
from litestar.datastructures import State

from gateway.fleet.signing import export_refusal
from gateway.records.db import opened
from gateway.services import Services
from gateway.stamps import utcnow
from gateway.web.responses_ops import DiskStatus, IndexStatus, LogStatus, MemoryStatus, QueueStatus, SystemStatus
from gateway.web.security import admin_guard
from runtimes.machine import memory_total_kib, peak_rss_bytes, rss_bytes


def process_uptime_s(pid: int) -> float | None:
    """Seconds since this process started (/proc/PID/stat field 22, in clock ticks since boot)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            started = int(fh.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime", encoding="ascii") as fh:
            return round(float(fh.read().split()[0]) - started, 1)
    except (OSError, IndexError, ValueError):
        return None


def disk_status(data_dir: Path) -> DiskStatus:
    usage = shutil.disk_usage(data_dir if data_dir.exists() else data_dir.parent)
    return DiskStatus(path=str(data_dir.resolve()), free_bytes=usage.free, total_bytes=usage.total,
                      used_percent=round(100.0 * usage.used / usage.total, 1) if usage.total else 0.0)


def log_status(gw: Services) -> LogStatus:
    db_path = Path(gw.settings.db_path)
    size = sum(p.stat().st_size for p in (db_path, Path(f"{db_path}-wal")) if p.exists())
    with opened(db_path) as db:
        rows = int(db.conn.execute("SELECT count(*) FROM answers").fetchone()[0])
    return LogStatus(rows=rows, db_bytes=size, pending=int(gw.log.pending))


def system_status(state: State) -> SystemStatus:
    gw = state.gw
    pid = os.getpid()
    waiting, running = gw.queue.counts()
    total_kib = memory_total_kib()
    store = gw.store
    answers = state.metrics.outcome_counts()
    return SystemStatus(
        time=utcnow(), pid=pid, uptime_s=process_uptime_s(pid), ready=state.ready.is_set(),
        load_error=state.load_error, answer_mode=gw.answer_mode().mode,
        disk=disk_status(Path(gw.settings.data_dir)),
        memory=MemoryStatus(rss_bytes=rss_bytes(pid), peak_rss_bytes=peak_rss_bytes(pid),
                            machine_total_bytes=None if total_kib is None else total_kib * 1024),
        queue=QueueStatus(waiting=waiting, running=running, capacity=gw.queue.queue_size),
        runtime=gw.runtimes.status().to_dict(),
        index=IndexStatus(active=store.active_id(), versions=len(store.list_versions()),
                          export_refusal=export_refusal(Path(gw.settings.data_dir))),
        answer_log=log_status(gw), answers=answers)


class StatusController(Controller):
    tags = ["system"]
    guards = [admin_guard]

    @get("/admin/status", summary="Disk, memory, queue, runtime, index and answer log in one object")
    async def status(self, state: State) -> SystemStatus:
        """For the admin page's status panel; read-only, cheap (no model is loaded from here)."""
        return await sync_to_thread(system_status, state)
