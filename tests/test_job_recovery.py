"""Jobs left queued or running by a crash end as failed on the next start, and their temporaries go.

A job's state lives in gateway.db but its work lives in the server's memory: after kill -9 nothing
will ever finish a queued or running job. The next JobRunner (built once at server start) marks
them failed with the reason, removes the upload spool folders and the index build's .tmp- dirs
(only under the index lock, so a live CLI ingest keeps its own), and leaves finished jobs alone.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from gateway.records.db import connect, new_id, utcnow
from gateway.records.jobs import INTERRUPTED, JobRunner, recover_interrupted
from retrieval.versions import IndexStore
from tests.support.server import GatewayServer

REPO = Path(__file__).resolve().parents[1]
NOAA = REPO / "sample_manuals" / "noaa_lcp_pistonboard_user_manual.pdf"
CONFIG = "[answer]\nmode = \"extractive\"\n"


def add_job(db_path: Path, state: str, message: str = "ingest a.pdf") -> str:
    job_id = new_id()
    connect(db_path)["jobs"].insert({"id": job_id, "kind": "ingest", "state": state, "progress": 3, "total": 9,
                                     "message": message, "created": utcnow(), "updated": utcnow(),
                                     "result": '{"version": "v1"}' if state == "done" else None})
    return job_id


def job(db_path: Path, job_id: str) -> dict:
    return dict(next(connect(db_path)["jobs"].rows_where("id = ?", [job_id])))


@pytest.fixture
def crashed(tmp_path: Path) -> dict:
    """A data dir as kill -9 leaves it: unfinished jobs, an upload spool folder, a half-built index."""
    data = tmp_path / "data"
    db_path = data / "gateway.db"
    jobs = {state: add_job(db_path, state, f"{state} step") for state in ("running", "queued", "done", "failed")}
    upload = data / "uploads" / "0123456789abcdef"
    upload.mkdir(parents=True)
    (upload / "a.pdf").write_bytes(b"%PDF-1.4 partial")
    build = data / "indexes" / ".tmp-v20250101T000000-abcdef"
    build.mkdir(parents=True)
    (build / "chunks.db").write_bytes(b"partial")
    version = data / "indexes" / "v20250101T000000-000000"
    version.mkdir()
    return {"data": data, "db": db_path, "jobs": jobs, "upload": upload, "build": build, "version": version}


def test_recovery_fails_unfinished_jobs_and_removes_their_temporaries(crashed: dict) -> None:
    db_path, jobs = crashed["db"], crashed["jobs"]
    before = {state: job(db_path, job_id) for state, job_id in jobs.items()}

    recovery = recover_interrupted(crashed["data"])

    assert sorted(recovery.failed_jobs) == sorted([jobs["running"], jobs["queued"]])
    for state in ("running", "queued"):
        row = job(db_path, jobs[state])
        assert row["state"] == "failed"
        assert row["message"].startswith("interrupted: the server stopped before this job finished (restart at ")
        assert f"{state} step" in row["message"]  # where it was when it stopped
        assert row["progress"] == 3 and row["updated"] >= before[state]["updated"]
    assert job(db_path, jobs["done"]) == before["done"]
    assert job(db_path, jobs["failed"]) == before["failed"]
    assert not crashed["upload"].exists() and (crashed["data"] / "uploads").is_dir()
    assert not crashed["build"].exists()
    assert crashed["version"].is_dir()  # real versions are never touched
    assert set(recovery.removed) == {crashed["upload"], crashed["build"]}
    assert recovery.kept == []

    again = recover_interrupted(crashed["data"])  # idempotent: nothing left to do
    assert again.failed_jobs == [] and again.removed == []


def test_recovery_leaves_a_live_ingest_its_build_dir(crashed: dict) -> None:
    """A CLI ingest holds the index lock while it writes indexes/.tmp-<id>/: that dir stays."""
    with IndexStore(crashed["data"])._locked():
        recovery = recover_interrupted(crashed["data"])
    assert crashed["build"].is_dir()
    assert recovery.kept and "index" in recovery.kept[0]
    assert job(crashed["db"], crashed["jobs"]["running"])["state"] == "failed"
    assert not crashed["upload"].exists()


def test_job_runner_recovers_once_and_not_under_a_live_server(crashed: dict) -> None:
    """The runner claims the data dir's jobs; a second one (a second `serve`) must not fail them."""
    runner = JobRunner(crashed["db"])
    assert runner.recovery is not None and len(runner.recovery.failed_jobs) == 2
    live = add_job(crashed["db"], "running")  # the live server's job, in progress
    second = JobRunner(crashed["db"])
    assert second.recovery is None
    assert job(crashed["db"], live)["state"] == "running"
    runner.close()
    third = JobRunner(crashed["db"])  # the first server is gone: its unfinished job is failed
    assert third.recovery is not None and third.recovery.failed_jobs == [live]
    assert job(crashed["db"], live)["message"].startswith(INTERRUPTED.split("{")[0])


def test_job_runner_without_jobs_table_rows_or_folders(tmp_path: Path) -> None:
    """A fresh data dir: nothing to recover, nothing created but the database and the lock."""
    runner = JobRunner(tmp_path / "data" / "gateway.db")
    assert runner.recovery is not None
    assert runner.recovery.failed_jobs == [] and runner.recovery.removed == []
    runner.close()


@pytest.mark.slow
def test_server_killed_during_an_upload_job_reports_it_failed_after_restart(tmp_path: Path) -> None:
    srv = GatewayServer(None, tmp_path, config=CONFIG,  # type: ignore[arg-type] - an empty data dir
                        env={"MANUALQA_TEST_PAUSE_AT": "after_vectors"})
    key = srv.admin_key()
    srv.start()
    assert srv.proc is not None
    try:
        r = httpx.post(srv.url + "/api/v1/manuals", headers={"Authorization": f"Bearer {key}"},
                       files={"data": (NOAA.name, NOAA.read_bytes(), "application/pdf")}, timeout=300)
        assert r.status_code == 202, r.text
        job_id = r.json()["job"]
        deadline = time.monotonic() + 300
        while "MANUALQA_PAUSED after_vectors" not in srv.log_path.read_text(errors="replace"):
            assert time.monotonic() < deadline, srv.log_path.read_text()[-2000:]
            assert srv.alive(), srv.log_path.read_text()[-2000:]
            time.sleep(0.2)
        assert httpx.get(f"{srv.url}/api/v1/jobs/{job_id}", timeout=10).json()["state"] == "running"
    finally:
        if srv.proc.poll() is None:
            os.killpg(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait(timeout=30)
    assert list((srv.data / "uploads").iterdir())
    assert [p for p in (srv.data / "indexes").iterdir() if p.name.startswith(".tmp-")]

    restarted = GatewayServer(None, tmp_path, config=CONFIG)  # type: ignore[arg-type] - same data dir
    restarted.start()
    try:
        row = httpx.get(f"{restarted.url}/api/v1/jobs/{job_id}", timeout=10).json()
        assert row["state"] == "failed", row
        assert row["message"].startswith("interrupted: the server stopped before this job finished (restart at ")
        assert list((restarted.data / "uploads").iterdir()) == []
        assert not [p for p in (restarted.data / "indexes").iterdir() if p.name.startswith(".tmp-")]
        assert "unfinished job" in restarted.log_path.read_text(errors="replace")  # the recovery is logged
    finally:
        restarted.stop()

