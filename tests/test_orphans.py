"""kill -9 of `manualqa ingest` or of the server while a PDF parses: the parse worker dies with it.

The worker (`python -m ingest.pdf`) is a separate process, so the kernel does not end it when its
parent is killed; left alone it would parse on for minutes. The PDF made here takes the worker
minutes (hundreds of pages that share one content stream of 20 000 text runs, about 2 s a page on
a small box), the parent-side timeout is set far above that, and the worker must still be gone soon
after its parent is (within GONE_WITHIN_S: a bound on a hang, far short of the parse, not a speed claim).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.pdfs import stream, write_pdf
from tests.support.server import GatewayServer

REPO = Path(__file__).resolve().parents[1]
SLOW_CONFIG = "[ingest]\ntimeout_s = 3000\n[answer]\nmode = \"extractive\"\n"
GONE_WITHIN_S = 60.0  # it goes at once; a nice-10 worker beside busy processes may take seconds to be scheduled


def slow_pdf(pages: int = 300, runs: int = 20_000) -> bytes:
    """A small file (one compressed content stream, shared by every page) that parses slowly."""
    content = b"BT /F1 9 Tf 72 760 Td " + b"(torque the hub bolts) Tj 0 -1 Td " * runs + b"ET"
    font = b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages)).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>",
        stream(content, compress=True),
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources "
                + font + b" >>"] * pages
    return write_pdf(objects)


def parse_workers(marker: str) -> list[int]:
    """Pids of live `ingest.pdf` workers whose command line contains `marker` (a temp path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next((line for line in (entry / "status").read_text().splitlines()
                          if line.startswith("State:")), "")
        except OSError:  # gone while we looked
            continue
        if "ingest.pdf" in cmdline and marker in cmdline and "zombie" not in state:
            found.append(int(entry.name))
    return found


def wait_for_worker(marker: str, parent: subprocess.Popen[bytes], log: Path, timeout_s: float = 240) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = parse_workers(marker)
        if pids:
            return pids[0]
        if parent.poll() is not None:
            pytest.fail(f"parent exited ({parent.returncode}) before parsing: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    pytest.fail(f"no ingest.pdf worker for {marker} after {timeout_s} s: {log.read_text()[-2000:]}")


def assert_worker_dies(worker: int, marker: str) -> None:
    """The worker must be gone (or a zombie) GONE_WITHIN_S after its parent was killed."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while worker in parse_workers(marker):
        if time.monotonic() > deadline:
            pytest.fail(f"parse worker {worker} still running {GONE_WITHIN_S} s after its parent was killed")
        time.sleep(0.1)


def kill_group(pgid: int) -> None:
    """Cleanup: the session the test started (a worker that outlived its parent is still in it)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.slow
def test_killed_cli_ingest_takes_its_parse_worker_with_it(tmp_path: Path) -> None:
    manuals = tmp_path / "manuals"
    manuals.mkdir()
    (manuals / "slow_manual.pdf").write_bytes(slow_pdf())
    config = tmp_path / "manualqa.toml"
    config.write_text(SLOW_CONFIG, encoding="utf-8")
    env = dict(os.environ, MANUALQA_DATA=str(tmp_path / "data"), MANUALQA_CONFIG=str(config),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    log = tmp_path / "ingest.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "gateway", "ingest", str(manuals)], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        worker = wait_for_worker(str(manuals), proc, log)
        time.sleep(1.0)  # parsing is under way, not just starting
        assert parse_workers(str(manuals)) == [worker]
        os.kill(proc.pid, signal.SIGKILL)  # the CLI only, as `kill -9 <pid>` would
        proc.wait(timeout=10)
        assert_worker_dies(worker, str(manuals))
    finally:
        kill_group(proc.pid)
        proc.wait(timeout=10)


@pytest.mark.slow
def test_killed_server_takes_the_upload_parse_worker_with_it(tmp_path: Path) -> None:
    srv = GatewayServer(None, tmp_path, config=SLOW_CONFIG)  # type: ignore[arg-type] - an empty data dir
    key = srv.admin_key()
    srv.start()
    assert srv.proc is not None
    uploads = str(srv.data / "uploads")
    replies: list[object] = []

    def upload() -> None:
        try:
            replies.append(httpx.post(srv.url + "/api/v1/manuals", headers={"Authorization": f"Bearer {key}"},
                                      files={"data": ("slow_manual.pdf", slow_pdf(), "application/pdf")},
                                      timeout=600))
        except httpx.HTTPError as exc:  # expected: the server is killed mid-request
            replies.append(exc)

    sender = threading.Thread(target=upload, daemon=True)
    sender.start()
    try:
        worker = wait_for_worker(uploads, srv.proc, srv.log_path)
        time.sleep(1.0)
        assert parse_workers(uploads) == [worker]
        os.kill(srv.proc.pid, signal.SIGKILL)  # the server only, not its session
        srv.proc.wait(timeout=10)
        assert_worker_dies(worker, uploads)
    finally:
        kill_group(srv.proc.pid)
        srv.proc.wait(timeout=10)
        sender.join(30)
    assert replies and isinstance(replies[0], httpx.HTTPError), replies
